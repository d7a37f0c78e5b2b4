package localrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/pipeline"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/safepath"
	"github.com/kiln-dev/kiln/pkg/termsafe"
	"github.com/kiln-dev/kiln/pkg/trigger"
	"github.com/kiln-dev/kiln/pkg/work"
)

// Run is local mode, `kiln-trigger --source dir:PATH`: it checks o as
// the cluster trigger does, then runs runLocal, printing its progress and
// summary to w.
func Run(ctx context.Context, o trigger.Options, w io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	return runLocal(ctx, o, w)
}

// runLocal is local mode (docs/local-mode.md): fingerprint the pools of
// a manifests folder as cluster mode does, run node-image with the local
// executor for each pool whose inputs changed since its last successful
// run, and leave the GitOps change in the output folder.
func runLocal(ctx context.Context, o trigger.Options, w io.Writer) error {
	src, err := filepath.Abs(strings.TrimPrefix(o.Source, "dir:"))
	if err != nil {
		return err
	}
	out, err := filepath.Abs(o.Output)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	release, err := lockOutput(out)
	if err != nil {
		return err
	}
	defer release()
	tasks, err := pipeline.LoadTasks(ctx, filepath.Join(o.Local.Root, "tasks"))
	if err != nil {
		return err
	}
	p, err := pipeline.LoadPipeline(ctx, filepath.Join(o.Local.Root, "pipelines", "node-image.yaml"))
	if err != nil {
		return err
	}
	snap, err := mcrender.LoadDir(src)
	if err != nil {
		return err
	}
	host := o.Local.Registry
	if host == "" {
		stop, h, err := embeddedRegistry(filepath.Join(out, "registry"))
		if err != nil {
			return err
		}
		defer stop()
		host = h
	}
	// The trigger's own reads and every step go through the mirrors, CAs
	// and proxy of the folder (localregistries.go).
	insecure := append([]string{host}, o.Insecure...)
	regCfg, regEnv, err := setupLocalRegistries(src, out, insecure)
	if err != nil {
		return err
	}
	r := registry.Remote{Insecure: insecure, Config: regCfg}
	resolve := func(ctx context.Context, ref string) (string, error) {
		return payload.Resolve(ctx, ref, r)
	}
	st, err := ReadState(out)
	if err != nil {
		return err
	}
	plans, err := PlanLocal(ctx, snap, st, p.Labels["app.kubernetes.io/version"], resolve)
	if err != nil {
		return err
	}
	sel, err := aheadSelection(snap, o.Namespace)
	if err != nil {
		return err
	}
	waves := map[string]int{}
	for _, pl := range plans {
		waves[pl.Pool] = pl.Wave
	}
	sort.SliceStable(plans, func(i, j int) bool { return waves[plans[i].Pool] < waves[plans[j].Pool] })
	var todo []PoolPlan
	for _, pl := range plans {
		if pl.Changed {
			todo = append(todo, pl)
		} else {
			fmt.Fprintf(w, "pool %s: nothing changed since run %s (fingerprint %s)\n", pl.Pool, st.Pools[pl.Pool].Run, pl.Fingerprint.Sum)
		}
	}
	ahead, skipped := planAhead(clusterVersion(snap), sel, plans, st)
	readTargets(ctx, ahead, r)
	if forgetAhead(st, ahead) {
		if err := st.Write(out); err != nil {
			return err
		}
	}
	if len(todo) == 0 && !pending(ahead) {
		fmt.Fprintln(w, "nothing to do: every pool's inputs match its last successful run")
		printReadiness(w, ahead, skipped)
		return nil
	}
	keys, err := EnsureLocalKeys(cmp.Or(o.Local.Keys, filepath.Join(out, "keys")), o.Local.Key)
	if err != nil {
		return err
	}
	stepEnv := append([]string{"KILN_INSECURE_REGISTRY=" + host}, regEnv...)
	if o.Local.Verbose {
		stepEnv = append(stepEnv, "KILN_VERBOSE=true")
	}
	l := &localRun{o: o, src: src, out: out, host: host, keys: keys, p: p, st: st, w: w,
		exec: &pipeline.Executor{Tasks: tasks, StepBinary: o.Local.StepBinary, Out: w, Namespace: "kiln",
			Env: stepEnv, Timeouts: localTimeouts}}
	runErr := l.runAll(ctx, todo, waves)
	if err := l.runAhead(ctx, ahead); err != nil {
		runErr = errors.Join(runErr, err)
	}
	l.printSummary()
	printReadiness(w, ahead, skipped)
	return runErr
}

// localTimeouts: the cluster's run timeout (kiln-config's default), not
// Tekton's 60m default, which is shorter than rollout's own.
var localTimeouts = &tektonv1.TimeoutFields{Pipeline: &metav1.Duration{Duration: 3 * time.Hour}}

type localRun struct {
	o         trigger.Options
	src, out  string
	host      string
	keys      LocalKeys
	p         *tektonv1.Pipeline
	st        State
	w         io.Writer
	exec      *pipeline.Executor
	summaries []summary
}

// workspaceCache is the node-image pipeline's optional cache workspace,
// bound to cacheDir under the output folder.
const (
	workspaceCache = "cache"
	cacheDir       = "cache"
)

type summary struct {
	pool, trigger, run, status, rendered, digest, signed, patched, nodeCheck string
}

func (l *localRun) runAll(ctx context.Context, todo []PoolPlan, waves map[string]int) error {
	failedWave := -1
	var errs []error
	for _, pl := range todo {
		if failedWave >= 0 && waves[pl.Pool] > failedWave {
			l.summaries = append(l.summaries, summary{pool: pl.Pool, trigger: pl.Trigger, run: pl.Run,
				status: fmt.Sprintf("waiting (wave %d failed)", failedWave)})
			continue
		}
		if err := l.runPool(ctx, pl); err != nil {
			errs = append(errs, err)
			failedWave = waves[pl.Pool]
		}
	}
	return errors.Join(errs...)
}

func (l *localRun) runPool(ctx context.Context, pl PoolPlan) error {
	// Changes names objects from the folder: escaped, as every line of
	// outside text kiln prints.
	fmt.Fprintf(l.w, "pool %s: inputs changed (%s: %s), running %s\n", pl.Pool, pl.Trigger, termsafe.Escape(pl.Changes), pl.Run)
	res, att, work, err := l.execute(ctx, pl.Pool, pl.Run, map[string]string{
		"trigger": pl.Trigger, "changes": pl.Changes,
		"update-boot-images": strconv.FormatBool(contains(l.o.Local.BootImagePools, pl.Pool)),
	})
	if err != nil {
		return err
	}
	s := summary{pool: pl.Pool, trigger: pl.Trigger, run: pl.Run, status: res.Status}
	s.rendered = taskResult(res, "render", "RENDERED_NAME")
	s.digest = taskResult(res, "image-build", "IMAGE_DIGEST")
	s.signed = signed(res)
	s.patched = taskResult(res, "bootimages", "MACHINESETS_PATCHED")
	s.nodeCheck = taskResult(res, "image-build", "NODE_CHECK")
	l.summaries = append(l.summaries, s)
	if err := res.Err(); err != nil {
		att.end(res.Status)
		return err
	}
	if err := collectGitOps(work, filepath.Join(l.out, "gitops"), pl.Pool); err != nil {
		return err
	}
	l.st.Pools[pl.Pool] = PoolState{Fingerprint: pl.Fingerprint.Sum, Parts: pl.Fingerprint.Parts, Inputs: pl.Fingerprint.Inputs, Run: pl.Run}
	if err := l.st.Write(l.out); err != nil {
		return err
	}
	att.end(res.Status)
	return nil
}

// execute runs node-image as run for pool with the params every local run
// has (the pool's repository, the folder as source) and extra, in the
// run's own folder under the output, and returns its result, its attempt
// (to end) and its work folder. An error is one the run could not start or
// finish with; a failed task is in the result.
func (l *localRun) execute(ctx context.Context, pool, run string, extra map[string]string) (*pipeline.RunResult, *attempt, string, error) {
	runDir := filepath.Join(l.out, "runs", run)
	// A run folder left by a failed or killed attempt is replaced, not
	// mixed in (localattempt.go says why).
	att, err := startAttempt(l.w, runDir, pool, run)
	if err != nil {
		return nil, nil, "", err
	}
	work := filepath.Join(runDir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, nil, "", err
	}
	params := map[string]string{
		"pool": pool, "repository": l.host + "/kiln/node-image-" + pool, "source": "dir:" + l.src,
	}
	maps.Copy(params, extra)
	ws := map[string]string{
		"work": work, "manifests": l.src, "signing-key": l.keys.Cosign, "public-key": l.keys.Public,
		"kmod-signing-cert": l.keys.KmodCert, "kmod-signing-key": l.keys.KmodKey,
	}
	// The Tasks pass $(workspaces.registries.path) as --registries-config:
	// bound to the folder runLocal wrote, as cluster mode binds its copy.
	ws[trigger.WorkspaceRegistries] = filepath.Join(l.out, registriesDir)
	// image-build's node import cache outlives the runs, beside them in
	// the output folder: the next run on the same base reads only the
	// layers above it.
	ws[workspaceCache] = filepath.Join(l.out, cacheDir)
	if err := os.MkdirAll(ws[workspaceCache], 0o755); err != nil {
		return nil, nil, "", err
	}
	l.exec.RunName, l.exec.OnTask = run, att.record
	res, err := l.exec.Run(ctx, l.p, params, ws, filepath.Join(runDir, "tasks"))
	if err != nil {
		return nil, nil, "", fmt.Errorf("running %s for pool %s: %w", run, pool, err)
	}
	return res, att, work, nil
}

func (l *localRun) printSummary() {
	tw := tabwriter.NewWriter(l.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nPOOL\tTRIGGER\tRUN\tSTATUS\tRENDERED\tIMAGE DIGEST\tSIGNED\tMACHINESETS PATCHED")
	for _, s := range l.summaries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.pool, s.trigger, s.run, s.status,
			orDash(s.rendered), orDash(s.digest), orDash(s.signed), orDash(s.patched))
	}
	_ = tw.Flush()
	// The node check's verdict per pool: what an rpm-ostree node imports
	// of the image, and which rendered files it gets from MCO's daemon
	// rather than from the image (image-build's build.json lists them all).
	for _, s := range l.summaries {
		if s.nodeCheck != "" {
			fmt.Fprintf(l.w, "node check %s: %s\n", s.pool, termsafe.Escape(s.nodeCheck))
		}
	}
}

// collectGitOps copies what the run changed into out: the osImageURL
// MachineConfig (rollout), the patched MachineSets (bootimages) and the
// rendered config, which is what a GitOps pull request carries.
func collectGitOps(root, out, pool string) error {
	// The pool's name names a file: one element, or nothing is copied.
	if err := safepath.Element(pool + ".json"); err != nil {
		return fmt.Errorf("collecting the GitOps change of pool %q: %w", pool, err)
	}
	ws := work.Workspace{Root: root}
	copies := map[string]string{
		ws.RenderedPath(): filepath.Join(out, "rendered", pool+".json"),
	}
	for _, g := range []string{filepath.Join(ws.StageDir(work.StageRollout), "*.yaml"), filepath.Join(ws.BootImageManifestsPath(), "*", "*.yaml")} {
		files, _ := filepath.Glob(g)
		for _, f := range files {
			rel, _ := filepath.Rel(root, f)
			copies[f] = filepath.Join(out, rel)
		}
	}
	for from, to := range copies {
		b, err := os.ReadFile(from)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := safepath.WriteFileAtomic(to, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// embeddedRegistry serves go-containerregistry's registry on loopback,
// blobs on disk under dir (manifests live in memory, for this run).
func embeddedRegistry(dir string) (stop func(), host string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: ggcrregistry.New(ggcrregistry.WithBlobHandler(ggcrregistry.NewDiskBlobHandler(dir)), ggcrregistry.Logger(log.New(io.Discard, "", 0)))}
	go func() { _ = srv.Serve(l) }()
	return func() { _ = srv.Close() }, l.Addr().String(), nil
}

func taskResult(r *pipeline.RunResult, task, name string) string {
	if t := r.Task(task); t != nil {
		return t.Results[name]
	}
	return ""
}

// signed: the image carries kiln's signature and passed the node's policy
// check. image-sign signed it, or image-build reused an image it proved
// kiln signed (the Pipeline then skips image-sign); verify checked the
// policy, or, for a reused image, rollout did, which makes the same check
// before any write (the Pipeline then skips verify).
func signed(r *pipeline.RunResult) string {
	reused := taskResult(r, work.StageImageBuild, "REUSED") == "true"
	sig := taskState(r, work.StageImageSign) == pipeline.StateSucceeded || (reused && taskState(r, work.StageImageSign) == pipeline.StateSkipped)
	checked := taskState(r, work.StageVerify) == pipeline.StateSucceeded || (reused && taskState(r, work.StageRollout) == pipeline.StateSucceeded)
	return strconv.FormatBool(sig && checked)
}

func taskState(r *pipeline.RunResult, task string) string {
	if t := r.Task(task); t != nil {
		return t.Status
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s || x == "*" {
			return true
		}
	}
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
