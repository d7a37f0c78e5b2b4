package trigger

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imageref"
	"github.com/kiln-dev/kiln/pkg/kube"
)

// Options configure the trigger controller.
type Options struct {
	// Source is "cluster" or "dir:PATH".
	Source string
	// Once runs a single pass over the source and exits (local mode).
	Once bool
	// Kubeconfig is used in cluster mode; empty means controller-runtime's
	// order ($KUBECONFIG, in-cluster, ~/.kube/config), as in the steps.
	Kubeconfig string
	// Context is the kubeconfig context; empty means its current-context.
	Context string
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

// LocalOptions are local mode's own settings (kiln-trigger's flags, cmd/cli).
type LocalOptions struct {
	// Registry receives the images; empty starts an embedded registry
	// (go-containerregistry's, blobs on disk under the output folder).
	Registry string
	// Key is a folder with cosign.key, cosign.pub and cosign.password
	// (the deprecated --key-dir); empty means Keys' cosign/ folder.
	Key string
	// Keys is the folder where keys are kept and reused (--keys-dir):
	// cosign/, kmod-cert/ and kmod-key/, each generated when missing;
	// empty means keys/ under the output folder. A folder outside it lets runs
	// from an empty output folder sign with the same keys, as a cluster's
	// Secrets would: the kmod image holds signed modules, so the same key
	// is what makes those runs give the same digests.
	Keys string
	// StepBinary is kiln-steps; Root holds pipelines/ and tasks/.
	StepBinary, Root string
	// BootImagePools end their run with the bootimages stage.
	BootImagePools []string
	// Verbose passes the trigger's --verbose on to every step (as
	// KILN_VERBOSE=true).
	Verbose bool
}

// Defaults of the trigger's options.
const (
	DefaultNamespace   = "kiln"
	DefaultOutput      = "_out"
	DefaultMetricsAddr = ":8080"
	DefaultProbeAddr   = ":8081"
	DefaultSettle      = 2 * time.Second
	DefaultMaxSettle   = 30 * time.Second
	DefaultStepBinary  = "kiln-steps"
	DefaultRoot        = "."
)

// DefaultOptions returns the trigger's options with their defaults.
func DefaultOptions() Options {
	return Options{
		Source: kube.SourceCluster, Namespace: DefaultNamespace, Output: DefaultOutput,
		MetricsAddr: DefaultMetricsAddr, LeaderElect: true, ProbeAddr: DefaultProbeAddr,
		Settle: DefaultSettle, MaxSettle: DefaultMaxSettle,
		Local: LocalOptions{StepBinary: DefaultStepBinary, Root: DefaultRoot, BootImagePools: []string{"worker"}},
	}
}

// Validate checks every flag and their combination at once; it reads
// nothing and connects nowhere.
func (o *Options) Validate() error {
	var errs []error
	switch {
	case o.Source == kube.SourceCluster:
		if o.Once {
			errs = append(errs, errors.New("--once needs --source dir:PATH"))
		}
		if o.Namespace == "" {
			errs = append(errs, errors.New("--namespace is required"))
		}
		// Settling coalesces watch events; local mode has none.
		if o.Settle <= 0 {
			errs = append(errs, fmt.Errorf("--settle %s: want a positive duration", o.Settle))
		}
		if o.MaxSettle < o.Settle {
			errs = append(errs, fmt.Errorf("--max-settle %s: want at least --settle (%s)", o.MaxSettle, o.Settle))
		}
	case strings.HasPrefix(o.Source, "dir:") && len(o.Source) > len("dir:"):
		if o.Output == "" {
			errs = append(errs, errors.New("--output-dir is required with --source dir:PATH"))
		}
		if o.Local.Registry != "" {
			if _, err := imageref.ParseRegistry(o.Local.Registry); err != nil {
				errs = append(errs, fmt.Errorf("--registry %q: want a registry host[:port]: %w", o.Local.Registry, err))
			}
		}
	default:
		errs = append(errs, fmt.Errorf(`--source %q: want "cluster" or "dir:PATH"`, o.Source))
	}
	return exitcode.ValidationErrors(errs...)
}
