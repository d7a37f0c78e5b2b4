package bootimage

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/stream-metadata-go/arch"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/version"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/work"
)

// Result names (docs/architecture.md lists every stage's results).
const (
	ResultPatched = "MACHINESETS_PATCHED"
	ResultSkipped = "MACHINESETS_SKIPPED"
)

// Options are the flags of `kiln-steps bootimages`.
type Options struct {
	step.Options
	kube.KubeOptions
	// Namespace holds the MachineSets.
	Namespace string
	// StableTimeout bounds the wait for a stable cluster.
	StableTimeout time.Duration
	// DefaultArch is the architecture of MachineSets without the annotation.
	DefaultArch string
	// DefaultOptIn is "platform", "true" or "false".
	DefaultOptIn string
	// VSphereTemplates names a ConfigMap (namespace/name) mapping stream
	// releases to vSphere template names.
	VSphereTemplates string
	// Output is where local mode writes the changed manifests.
	Output string
	// SkewLimits are the oldest boot images the release accepts.
	SkewLimits SkewLimits
	// NoHistory turns BootImageHistory records off.
	NoHistory bool
	// CAPIMode, CAPISelector and CAPINamespace opt Cluster API MachineSets
	// in (see CAPIMode for why these are flags and not MachineConfiguration).
	CAPIMode, CAPISelector, CAPINamespace string
}

// Defaults of bootimages' options.
const (
	DefaultStableTimeout = 10 * time.Minute
	DefaultOptInPlatform = "platform"
)

// DefaultOptions returns bootimages' options with their defaults. There
// is no pool: boot images are per cluster (the payload's
// coreos-bootimages stream), applied to every enrolled MachineSet.
func DefaultOptions() *Options {
	return &Options{
		Options: step.DefaultOptions(), KubeOptions: kube.DefaultKubeOptions(),
		Namespace: MachineAPINamespace, StableTimeout: DefaultStableTimeout, DefaultArch: arch.CurrentRpmArch(),
		DefaultOptIn: DefaultOptInPlatform, SkewLimits: DefaultSkewLimits, CAPIMode: string(CAPINone), CAPINamespace: CAPINamespace,
	}
}

// Validate reports every bad flag at once, before the cluster is asked.
func (o *Options) Validate() error {
	errs := []error{o.Options.ValidateFolders(), o.KubeOptions.Validate()}
	if _, err := o.optIn(); err != nil {
		errs = append(errs, err)
	}
	if _, err := o.capiOptIn(); err != nil {
		errs = append(errs, err)
	}
	for _, l := range []struct{ flag, v string }{{"--skew-limit-ocp", o.SkewLimits.OCP}, {"--skew-limit-rhcos", o.SkewLimits.RHCOS}} {
		if _, err := version.ParseGeneric(l.v); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", l.flag, l.v, err))
		}
	}
	if o.VSphereTemplates != "" {
		if ns, name, ok := strings.Cut(o.VSphereTemplates, "/"); !ok || ns == "" || name == "" {
			errs = append(errs, fmt.Errorf("--vsphere-templates %q: want namespace/name", o.VSphereTemplates))
		}
	}
	return exitcode.ValidationErrors(errs...)
}

// optIn is --default-opt-in: nil for the platform's default.
func (o *Options) optIn() (*bool, error) {
	switch o.DefaultOptIn {
	case DefaultOptInPlatform:
		return nil, nil
	case "true", "false":
		v, _ := strconv.ParseBool(o.DefaultOptIn)
		return &v, nil
	}
	return nil, fmt.Errorf(`--default-opt-in %q: want "platform", "true" or "false"`, o.DefaultOptIn)
}

// Run implements step.Runner.
func (o *Options) Run(ctx context.Context, s step.Streams) error {
	if err := o.Validate(); err != nil {
		return err
	}
	optIn, err := o.optIn()
	if err != nil {
		return err
	}
	capi, err := o.capiOptIn()
	if err != nil {
		return err
	}
	dir, err := o.SourceDir()
	if err != nil {
		return err
	}
	stageDir, err := o.Workspace().Ensure(work.StageBootImages)
	if err != nil {
		return err
	}
	cluster, err := o.cluster(dir, stageDir)
	if err != nil {
		return err
	}
	progress := step.NewProgress(s.Out, work.StageBootImages)
	// controller-runtime's client logs the apiserver's warnings; show them
	// as progress lines instead of losing them.
	ctrllog.SetLogger(funcr.New(func(_, args string) { progress.Printf("apiserver: %s", args) }, funcr.Options{}))
	r := &Reconciler{Cluster: cluster, Namespace: o.Namespace, DefaultArch: o.DefaultArch, DefaultOptIn: optIn,
		StableTimeout: o.StableTimeout, Log: progressWriter{progress}, SkewLimits: o.SkewLimits, NoHistory: o.NoHistory, CAPI: capi}
	if o.VSphereTemplates != "" {
		if r.VSphereTemplates, err = o.templates(ctx, cluster); err != nil {
			return err
		}
	}
	rep, runErr := r.Run(ctx)
	if err := writeReport(filepath.Join(stageDir, work.BootImageReportFile), rep); err != nil {
		return err
	}
	if err := WriteMetrics(filepath.Join(stageDir, work.BootImageMetricsFile), rep, runErr != nil, rep.SkewEnforcement, float64(time.Now().Unix())); err != nil {
		return err
	}
	res := o.Results()
	_ = res.Set(ResultPatched, strconv.Itoa(rep.PatchedCount()))
	_ = res.Set(ResultSkipped, strconv.Itoa(rep.SkippedCount()))
	if err := res.Write(); err != nil {
		return err
	}
	progress.Printf("%d patched, %d up to date, %d skipped, %d failed of %d enrolled", len(rep.Patched), len(rep.UpToDate), len(rep.Skipped), len(rep.Errors), rep.Enrolled)
	if c := rep.CAPI; c != nil {
		progress.Printf("Cluster API: %d patched, %d up to date, %d skipped, %d failed of %d enrolled; %d templates created, %d deleted",
			len(c.Patched), len(c.UpToDate), len(c.Skipped), len(c.Errors), c.Enrolled, len(c.TemplatesCreated), len(c.TemplatesDeleted))
	}
	return runErr
}

func (o *Options) capiOptIn() (CAPIOptIn, error) {
	in := CAPIOptIn{Mode: CAPIMode(o.CAPIMode), Namespace: o.CAPINamespace}
	switch in.Mode {
	case CAPINone, CAPIAll:
		if o.CAPISelector != "" {
			return in, fmt.Errorf("--capi-selector is only used with --capi-mode Partial, not %s", o.CAPIMode)
		}
	case CAPIPartial:
		if o.CAPISelector == "" {
			return in, fmt.Errorf("--capi-mode Partial needs --capi-selector")
		}
		sel, err := labels.Parse(o.CAPISelector)
		if err != nil {
			return in, fmt.Errorf("--capi-selector %q: %w", o.CAPISelector, err)
		}
		in.Selector = sel
	default:
		return in, fmt.Errorf("--capi-mode %q: want None, All or Partial", o.CAPIMode)
	}
	return in, nil
}

func (o *Options) cluster(dir, stageDir string) (Cluster, error) {
	src := kube.Source{Kubeconfig: o.Kubeconfig, Context: o.Context}
	if dir != "" {
		out := o.Output
		if out == "" {
			out = filepath.Join(stageDir, work.BootImageManifestsDir)
		}
		src.Folder = folder(dir, out)
	}
	c, err := kube.New(src)
	if err != nil {
		return nil, err
	}
	return Kube{Client: c}, nil
}

func (o *Options) templates(ctx context.Context, c Cluster) (map[string]string, error) {
	ns, name, _ := strings.Cut(o.VSphereTemplates, "/")
	cm, err := c.ConfigMap(ctx, ns, name)
	if err != nil {
		return nil, fmt.Errorf("reading vSphere template mapping: %w", err)
	}
	return cm.Data, nil
}

func writeReport(path string, rep *Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// progressWriter turns the reconciler's lines into progress lines.
type progressWriter struct{ p *step.Progress }

func (w progressWriter) Write(b []byte) (int, error) {
	// Printf escapes a newline inside a line; the reconciler's own line
	// breaks make one progress line each.
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		w.p.Printf("%s", line)
	}
	return len(b), nil
}
