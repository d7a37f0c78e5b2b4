package render

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/blang/semver/v4"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imageref"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/safepath"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/taskresult"
	"github.com/kiln-dev/kiln/pkg/work"
)

// StepOptions are `kiln-steps render`'s flags.
type StepOptions struct {
	step.Options
	kube.KubeOptions
	// Fetch bounds remote-source snapshots.
	FetchTimeout  time.Duration
	FetchMaxBytes int64
	FetchAttempts int
	// Release, when set, replaces the payload facts the cluster's
	// ConfigMap machine-config-osimageurl gives (--os-image,
	// --extensions-image, --release-version): an upgrade-ahead run renders
	// the pool for the release it prepares, not the one the cluster runs.
	Release Release
}

// Release is the payload of a release other than the running one; an
// empty field keeps the cluster's.
type Release struct {
	OSImage, ExtensionsImage, Version string
}

// apply returns f with r's non-empty fields.
func (r Release) apply(f payload.Facts) payload.Facts {
	f.BaseOSImage = cmp.Or(r.OSImage, f.BaseOSImage)
	f.ExtensionsImage = cmp.Or(r.ExtensionsImage, f.ExtensionsImage)
	f.ReleaseVersion = cmp.Or(r.Version, f.ReleaseVersion)
	return f
}

// validate parses the images strictly, as payload.FromObjects does the
// ConfigMap's: they become the rendered osImageURL and a build argument.
func (r Release) validate() []error {
	var errs []error
	for _, f := range [][2]string{{"os-image", r.OSImage}, {"extensions-image", r.ExtensionsImage}} {
		if f[1] == "" {
			continue
		}
		if _, err := imageref.ParseStrict(f[1]); err != nil {
			errs = append(errs, fmt.Errorf("--%s %q: want a fully qualified image reference (registry/repository:tag or registry/repository@sha256:<64 hex>): %w", f[0], f[1], err))
		}
	}
	if r.Version != "" {
		if _, err := semver.Parse(r.Version); err != nil {
			errs = append(errs, fmt.Errorf("--release-version %q: want a semantic version (4.19.1): %w", r.Version, err))
		}
	}
	return errs
}

// Defaults of render's remote-source fetches.
const (
	DefaultFetchTimeout  = 30 * time.Second
	DefaultFetchMaxBytes = 16 << 20
	DefaultFetchAttempts = 3
)

// DefaultStepOptions returns render's options with their defaults.
func DefaultStepOptions() *StepOptions {
	return &StepOptions{
		Options: step.DefaultOptions(), KubeOptions: kube.DefaultKubeOptions(),
		FetchTimeout: DefaultFetchTimeout, FetchMaxBytes: DefaultFetchMaxBytes, FetchAttempts: DefaultFetchAttempts,
	}
}

// Validate reports every bad flag at once.
func (o *StepOptions) Validate() error {
	var errs []error
	if o.FetchTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--fetch-timeout %s: want a positive duration", o.FetchTimeout))
	}
	if o.FetchMaxBytes <= 0 {
		errs = append(errs, fmt.Errorf("--fetch-max-bytes %d: want a positive size", o.FetchMaxBytes))
	}
	if o.FetchAttempts < 1 {
		errs = append(errs, fmt.Errorf("--fetch-attempts %d: want at least 1", o.FetchAttempts))
	}
	errs = append(errs, o.Release.validate()...)
	return exitcode.ValidationErrors(append(errs, o.Options.Validate(), o.KubeOptions.Validate())...)
}

// Run renders the pool and writes rendered.json, inputs.json,
// mco-inputs.json (the drift gate's, predict.go) and the results. Nothing is written unless every check passed.
func (o *StepOptions) Run(ctx context.Context, s step.Streams) error {
	if err := o.Validate(); err != nil {
		return err
	}
	p := step.NewProgress(s.Out, work.StageRender)
	objs, err := o.load(ctx)
	if err != nil {
		return err
	}
	if o.Release != (Release{}) {
		p.Printf("rendering for release %s: OS image %s, extensions image %s", o.Release.Version, o.Release.OSImage, o.Release.ExtensionsImage)
	}
	out, err := RunFor(ctx, objs, o.Pool, &Fetcher{Timeout: o.FetchTimeout, MaxBytes: o.FetchMaxBytes, Attempts: o.FetchAttempts}, p, o.Release)
	if err != nil {
		return err
	}
	if err := out.Write(o.Workspace(), o.Results()); err != nil {
		return err
	}
	p.Printf("rendered %s from %d MachineConfigs", out.Result.Config.Name, len(out.Result.Inputs))
	return nil
}

// load reads render's objects from --source: the cluster, or a folder
// through the same client interface (render writes no cluster object).
func (o *StepOptions) load(ctx context.Context) (*mcrender.Objects, error) {
	src, err := kube.SourceOf(&o.KubeOptions, &kube.Folder{})
	if err != nil {
		return nil, err
	}
	c, err := kube.New(src)
	if err != nil {
		return nil, err
	}
	return mcrender.Load(ctx, c, src.Folder != nil)
}

// Output is a finished render: the rendered config, the record of its
// inputs and the stage's results.
type Output struct {
	Result  *mcrender.Result
	Inputs  []work.Input
	Results map[string]string
	// Module is the pool's ModuleDay0, if one selects it; the kmod stages
	// read it from the workspace.
	Module *kmmv1beta1.ModuleDay0
	// MCO is what the drift gate's prediction reads (pkg/mcrender/predict.go): saved
	// here because the prediction needs the image digest, known only after
	// image-build.
	MCO *work.MCOInputs
}

// Run renders pool from objs and prepares the stage's outputs. Progress
// lines name each input MC in merge order.
func Run(ctx context.Context, objs *mcrender.Objects, pool string, f *Fetcher, p *step.Progress) (*Output, error) {
	return RunFor(ctx, objs, pool, f, p, Release{})
}

// RunFor is Run with rel's payload facts in place of the cluster's.
func RunFor(ctx context.Context, objs *mcrender.Objects, pool string, f *Fetcher, p *step.Progress, rel Release) (*Output, error) {
	mcp, err := objs.Pool(pool)
	if err != nil {
		return nil, fmt.Errorf("rendering pool %q: %w", pool, err)
	}
	facts, err := objs.Payload()
	if err != nil {
		return nil, fmt.Errorf("rendering pool %q: %w", pool, err)
	}
	facts = rel.apply(facts)
	mod, err := objs.Module(mcp)
	if err != nil {
		return nil, fmt.Errorf("rendering pool %q: %w", pool, err)
	}
	defaults := mcrender.Defaults{OSImageURL: facts.BaseOSImage, ExtensionsImage: facts.ExtensionsImage, ReleaseVersion: facts.ReleaseVersion}
	if f == nil {
		f = &Fetcher{}
	}
	res, err := mcrender.Render(ctx, mcrender.Request{
		Pool: mcp, Configs: objs.Configs, Sources: f, Defaults: defaults,
		OnInput: func(i int, mc *mcfgv1.MachineConfig) {
			if p != nil {
				p.Printf("input %d: MachineConfig %s", i+1, mc.Name)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	mco, err := mcrender.NewMCOInputs(mcp, objs.Configs, defaults)
	if err != nil {
		return nil, fmt.Errorf("rendering pool %q: %w", pool, err)
	}
	out := &Output{Result: res, Module: mod, MCO: mco}
	if err := out.record(objs, mcp, mod); err != nil {
		return nil, err
	}
	spec, err := json.Marshal(res.Config.Spec)
	if err != nil {
		return nil, fmt.Errorf("hashing rendered config: %w", err)
	}
	sum := sha256.Sum256(spec)
	out.Results = map[string]string{
		"RENDERED_NAME": res.Config.Name,
		"CONFIG_HASH":   "sha256:" + hex.EncodeToString(sum[:]),
		"BASE_IMAGE":    res.Config.Spec.OSImageURL,
		"HAS_KMOD":      strconv.FormatBool(mod != nil),
		"KMOD_BUILD":    strconv.FormatBool(mod != nil && mod.Spec.OSMapping.Build != nil),
		"KMOD_SIGN":     strconv.FormatBool(mod != nil && mod.Spec.OSMapping.Sign != nil),
	}
	return out, nil
}

// record lists every object the render read, for inputs.json.
func (out *Output) record(objs *mcrender.Objects, mcp *mcfgv1.MachineConfigPool, mod *kmmv1beta1.ModuleDay0) error {
	add := func(in work.Input, err error) error {
		if err == nil {
			out.Inputs = append(out.Inputs, in)
		}
		return err
	}
	if err := add(mcrender.NewInput("MachineConfigPool", mcp, mcp.Spec)); err != nil {
		return err
	}
	for _, mc := range out.Result.Inputs {
		if err := add(mcrender.NewInput("MachineConfig", mc, mc.Spec)); err != nil {
			return err
		}
	}
	if cur := out.Result.Current; cur != nil {
		in, err := mcrender.NewInput("MachineConfig", cur, cur.Spec)
		in.Role = work.RoleCurrent
		if err := add(in, err); err != nil {
			return err
		}
	}
	for _, cm := range objs.ConfigMaps {
		if cm.Name == "machine-config-osimageurl" {
			if err := add(mcrender.NewInput("ConfigMap", cm, cm.Data)); err != nil {
				return err
			}
		}
	}
	for _, cv := range objs.ClusterVersions {
		if err := add(mcrender.NewInput("ClusterVersion", cv, cv.Status.Desired)); err != nil {
			return err
		}
	}
	if mod != nil {
		return add(mcrender.NewInput("ModuleDay0", mod, mod.Spec))
	}
	return nil
}

// Write stores rendered.json and inputs.json, then the results. Results are
// checked against Tekton's budget before any file is written.
func (out *Output) Write(ws work.Workspace, r *taskresult.Results) error {
	for k, v := range out.Results {
		if err := r.Set(k, v); err != nil {
			return err
		}
	}
	if size := r.Size(); size > taskresult.MaxResultBytes {
		return fmt.Errorf("writing results: %d bytes, limit %d: %w", size, taskresult.MaxResultBytes, taskresult.ErrResultBudget)
	}
	if _, err := ws.Ensure(work.StageRender); err != nil {
		return err
	}
	rendered, err := json.MarshalIndent(out.Result.Config, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding rendered config: %w", err)
	}
	inputs, err := json.MarshalIndent(out.Inputs, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding inputs: %w", err)
	}
	files := map[string][]byte{ws.RenderedPath(): rendered, ws.InputsPath(): inputs}
	if out.MCO != nil {
		if files[ws.MCOInputsPath()], err = json.MarshalIndent(out.MCO, "", "  "); err != nil {
			return fmt.Errorf("encoding the prediction's inputs: %w", err)
		}
	}
	if out.Module != nil {
		if files[ws.ModuleDay0Path()], err = json.MarshalIndent(out.Module, "", "  "); err != nil {
			return fmt.Errorf("encoding ModuleDay0: %w", err)
		}
	}
	for path, data := range files {
		if err := safepath.WriteFileAtomic(path, append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing the render outputs: %w", err)
		}
	}
	return r.Write()
}
