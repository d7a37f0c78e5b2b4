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
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/version"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kiln-dev/kiln/pkg/step"
)

// Result names (DESIGN §3).
const (
	ResultPatched = "MACHINESETS_PATCHED"
	ResultSkipped = "MACHINESETS_SKIPPED"
)

// Options are the flags of `kiln-steps bootimages`.
type Options struct {
	step.Options
	step.KubeOptions
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

// AddFlags implements step.Runner.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Options.AddFlags(fs)
	o.KubeOptions.AddFlags(fs)
	fs.StringVar(&o.Namespace, "namespace", MachineAPINamespace, "namespace of the Machine API MachineSets")
	fs.DurationVar(&o.StableTimeout, "stable-timeout", 10*time.Minute, "how long to wait for a stable cluster (ClusterVersion history[0] Completed, as MCO)")
	fs.StringVar(&o.DefaultArch, "default-arch", arch.CurrentRpmArch(), "stream architecture of MachineSets without the autoscaler arch annotation")
	fs.StringVar(&o.DefaultOptIn, "default-opt-in", "platform", `opt-in when the admin has none: "platform" (the platform's default), "true" or "false"`)
	fs.StringVar(&o.VSphereTemplates, "vsphere-templates", "", "ConfigMap namespace/name mapping stream releases to vSphere template names")
	fs.StringVar(&o.SkewLimits.OCP, "skew-limit-ocp", DefaultSkewLimits.OCP, "oldest OCP version boot images may come from (skew enforcement)")
	fs.StringVar(&o.SkewLimits.RHCOS, "skew-limit-rhcos", DefaultSkewLimits.RHCOS, "oldest RHEL major.minor of RHCOS boot images (skew enforcement)")
	fs.BoolVar(&o.NoHistory, "no-history", false, "do not record BootImageHistory objects")
	fs.StringVar(&o.CAPIMode, "capi-mode", string(CAPINone), "Cluster API MachineSets (cluster.x-k8s.io) to manage: None, All or Partial (with --capi-selector)")
	fs.StringVar(&o.CAPISelector, "capi-selector", "", "label selector of the Cluster API MachineSets to manage (mode Partial)")
	fs.StringVar(&o.CAPINamespace, "capi-namespace", CAPINamespace, "namespace of the Cluster API MachineSets and their templates")
	fs.StringVar(&o.Output, "output", "", "local mode: folder for the changed manifests (default <work>/bootimages/manifests)")
}

// Run implements step.Runner.
func (o *Options) Run(ctx context.Context, s step.Streams) error {
	if o.Work == "" {
		return &step.UsageError{Err: fmt.Errorf("--work is required")}
	}
	var optIn *bool
	switch o.DefaultOptIn {
	case "platform":
	case "true", "false":
		v, _ := strconv.ParseBool(o.DefaultOptIn)
		optIn = &v
	default:
		return &step.UsageError{Err: fmt.Errorf(`--default-opt-in %q: want "platform", "true" or "false"`, o.DefaultOptIn)}
	}
	capi, err := o.capiOptIn()
	if err != nil {
		return err
	}
	dir, err := o.SourceDir()
	if err != nil {
		return err
	}
	stageDir, err := o.Workspace().Ensure(step.StageBootImages)
	if err != nil {
		return err
	}
	cluster, err := o.cluster(dir, stageDir)
	if err != nil {
		return err
	}
	progress := step.NewProgress(s.Out, step.StageBootImages)
	// controller-runtime's client logs the apiserver's warnings; show them
	// as progress lines instead of losing them.
	ctrllog.SetLogger(funcr.New(func(_, args string) { progress.Printf("apiserver: %s", args) }, funcr.Options{}))
	r := &Reconciler{Cluster: cluster, Namespace: o.Namespace, DefaultArch: o.DefaultArch, DefaultOptIn: optIn,
		StableTimeout: o.StableTimeout, Log: progressWriter{progress}, SkewLimits: o.SkewLimits, NoHistory: o.NoHistory, CAPI: capi}
	for flag, v := range map[string]string{"--skew-limit-ocp": o.SkewLimits.OCP, "--skew-limit-rhcos": o.SkewLimits.RHCOS} {
		if _, err := version.ParseGeneric(v); err != nil {
			return &step.UsageError{Err: fmt.Errorf("%s %q: %w", flag, v, err)}
		}
	}
	if o.VSphereTemplates != "" {
		if r.VSphereTemplates, err = o.templates(ctx, cluster); err != nil {
			return err
		}
	}
	rep, runErr := r.Run(ctx)
	if err := writeReport(filepath.Join(stageDir, "report.json"), rep); err != nil {
		return err
	}
	if err := WriteMetrics(filepath.Join(stageDir, "metrics.prom"), rep, runErr != nil, rep.SkewEnforcement, float64(time.Now().Unix())); err != nil {
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
			return in, &step.UsageError{Err: fmt.Errorf("--capi-selector is only used with --capi-mode Partial, not %s", o.CAPIMode)}
		}
	case CAPIPartial:
		if o.CAPISelector == "" {
			return in, &step.UsageError{Err: fmt.Errorf("--capi-mode Partial needs --capi-selector")}
		}
		sel, err := labels.Parse(o.CAPISelector)
		if err != nil {
			return in, &step.UsageError{Err: fmt.Errorf("--capi-selector %q: %w", o.CAPISelector, err)}
		}
		in.Selector = sel
	default:
		return in, &step.UsageError{Err: fmt.Errorf("--capi-mode %q: want None, All or Partial", o.CAPIMode)}
	}
	return in, nil
}

func (o *Options) cluster(dir, stageDir string) (Cluster, error) {
	if dir != "" {
		out := o.Output
		if out == "" {
			out = filepath.Join(stageDir, "manifests")
		}
		return LoadDir(dir, out)
	}
	c, err := o.Client()
	if err != nil {
		return nil, err
	}
	return Kube{Client: c}, nil
}

func (o *Options) templates(ctx context.Context, c Cluster) (map[string]string, error) {
	ns, name, ok := strings.Cut(o.VSphereTemplates, "/")
	if !ok || ns == "" || name == "" {
		return nil, &step.UsageError{Err: fmt.Errorf("--vsphere-templates %q: want namespace/name", o.VSphereTemplates)}
	}
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
	w.p.Printf("%s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
