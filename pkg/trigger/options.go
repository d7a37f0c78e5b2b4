package trigger

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Options configure the trigger controller.
type Options struct {
	// Source is "cluster" or "dir:PATH".
	Source string
	// Once runs a single pass over the source and exits (local mode).
	Once bool
	// Kubeconfig is used in cluster mode; empty means in-cluster.
	Kubeconfig string
	// Namespace is where PipelineRuns are created.
	Namespace string
	// Output is where local mode writes the GitOps change.
	Output string
	// MetricsAddr and LeaderElect configure the controller manager.
	MetricsAddr string
	LeaderElect bool
	// ProbeAddr serves /healthz and /readyz.
	ProbeAddr string
	// Settle and MaxSettle coalesce bursts of edits into one run.
	Settle, MaxSettle time.Duration
	// Insecure lists registries reached over plain HTTP when a payload
	// image tag is resolved.
	Insecure []string
	// Local configures local mode.
	Local LocalOptions
}

// AddFlags registers the trigger's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Source, "source", "cluster", `where inputs come from: "cluster" or "dir:PATH"`)
	fs.BoolVar(&o.Once, "once", false, "run one pass and exit (local mode)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file; empty means in-cluster")
	fs.StringVar(&o.Namespace, "namespace", "kiln", "namespace for PipelineRuns")
	fs.StringVar(&o.Output, "out", "_out", "local mode: folder for the GitOps change (MachineConfigs, MachineSets, rendered configs), run folders, keys and state")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "address of the metrics endpoint")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "use leader election (cluster mode)")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.DurationVar(&o.Settle, "settle", 2*time.Second, "quiet time after the last input change before a pool's run is made")
	fs.DurationVar(&o.MaxSettle, "max-settle", 30*time.Second, "longest wait for a burst of changes to end")
	fs.StringVar(&o.Local.Registry, "registry", "", "local mode: registry host[:port] for the images (default: an embedded registry)")
	fs.StringVar(&o.Local.Key, "key", "", "local mode: folder with cosign.key, cosign.pub, cosign.password (default: generated under --output on first use)")
	fs.StringVar(&o.Local.StepBinary, "steps", "kiln-steps", "local mode: the kiln-steps binary")
	fs.StringVar(&o.Local.Root, "root", ".", "local mode: folder holding pipelines/ and tasks/")
	fs.StringSliceVar(&o.Local.BootImagePools, "boot-image-pools", []string{"worker"}, "local mode: pools whose run ends with the bootimages stage")
	fs.StringSliceVar(&o.Insecure, "insecure-registry", nil, "registry (host[:port]) reached over plain HTTP")
}

// Validate checks the flag combination.
func (o *Options) Validate() error {
	switch {
	case o.Source == "cluster":
		if o.Once {
			return errors.New("--once needs --source dir:PATH")
		}
	case strings.HasPrefix(o.Source, "dir:") && len(o.Source) > len("dir:"):
	default:
		return fmt.Errorf(`--source %q: want "cluster" or "dir:PATH"`, o.Source)
	}
	return nil
}
