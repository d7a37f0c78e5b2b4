package step

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/taskresult"
	"github.com/kiln-dev/kiln/pkg/work"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Options are the flags every stage shares. Stage option structs embed it
// and add the sub-options they need (registry.RegistryOptions, SigningOptions,
// KubeOptions), in the manner of cosign's options package.
type Options struct {
	// Work is the root of the "work" workspace.
	Work string
	// ResultsDir is where results are written; Tekton's is /tekton/results.
	ResultsDir string
	// Pool is the MachineConfigPool the run is for.
	Pool string
}

// DefaultOptions returns the shared options with their defaults: none.
// Work and ResultsDir have no default on purpose: a path such as
// /workspace/work is a Tekton pod's, and a step run by hand on a host
// would write there. A Task passes both (flags, or KILN_WORK and
// KILN_RESULTS_DIR).
func DefaultOptions() Options { return Options{} }

// Validate reports every missing or malformed shared flag at once.
func (o *Options) Validate() error {
	return exitcode.ValidationErrors(o.ValidateFolders(), o.ValidatePool())
}

// ValidateFolders reports a missing --work or --results-dir: the only
// folders a stage writes into, so neither may be guessed.
func (o *Options) ValidateFolders() error {
	return errors.Join(exitcode.Required("work", o.Work), exitcode.Required("results-dir", o.ResultsDir))
}

// ValidatePool reports a missing or malformed --pool.
func (o *Options) ValidatePool() error {
	if o.Pool == "" {
		return fmt.Errorf("--pool is required")
	}
	// The apiserver's rule for a custom resource's metadata.name, and its
	// message, so a name it would refuse never reaches a path or a label.
	if errs := validation.IsDNS1123Subdomain(o.Pool); len(errs) > 0 {
		return fmt.Errorf("--pool %q: not a MachineConfigPool name: %s", o.Pool, strings.Join(errs, "; "))
	}
	return nil
}

// Workspace returns the layout rooted at --work.
func (o *Options) Workspace() work.Workspace { return work.Workspace{Root: o.Work} }

// Results returns a result collector writing into --results-dir.
func (o *Options) Results() *taskresult.Results { return taskresult.NewResults(o.ResultsDir) }

// Formats of -o/--output, for the commands that print a result: text
// for people (the default), json for scripts. With json, stdout holds
// the JSON document alone; progress lines go to stderr.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// ValidateFormat reports an --output that is neither text nor json.
func ValidateFormat(format string) error {
	if format != FormatText && format != FormatJSON {
		return fmt.Errorf("--output %q: want %s or %s", format, FormatText, FormatJSON)
	}
	return nil
}

// SigningOptions name a cosign key. The key itself is read from a file (a
// mounted Secret) and never from a flag, so it cannot show up in a pod spec
// or a process listing.
type SigningOptions struct {
	KeyPath string
	// PasswordEnv names the environment variable holding the key password.
	PasswordEnv string
}

// Defaults of the signing options: the signing-key workspace as the
// Tasks mount it, and cosign's own password variable.
const (
	DefaultKey         = "/etc/kiln/signing/cosign.key"
	DefaultPasswordEnv = "COSIGN_PASSWORD"
)

// DefaultSigningOptions returns the signing options with their defaults.
func DefaultSigningOptions() SigningOptions {
	return SigningOptions{KeyPath: DefaultKey, PasswordEnv: DefaultPasswordEnv}
}

// Password returns the key password from the environment.
func (o *SigningOptions) Password() []byte { return []byte(os.Getenv(o.PasswordEnv)) }

// KubeOptions say where cluster objects come from.
type KubeOptions struct {
	// Kubeconfig is a kubeconfig path; empty means controller-runtime's
	// order: $KUBECONFIG, in-cluster, ~/.kube/config.
	Kubeconfig string
	// Context is the kubeconfig context to use; empty means its
	// current-context.
	Context string
	// Source is "cluster" or "dir:PATH" (a directory of manifests).
	Source string
}

// SourceCluster is the default source: the cluster's API.
const SourceCluster = "cluster"

// DefaultKubeOptions returns the kube options with their defaults.
func DefaultKubeOptions() KubeOptions { return KubeOptions{Source: SourceCluster} }

// Validate reports a malformed --source.
func (o *KubeOptions) Validate() error {
	_, err := o.SourceDir()
	return err
}

// SourceDir returns the manifest directory of a dir: source, or "" for the cluster.
func (o *KubeOptions) SourceDir() (string, error) {
	switch {
	case o.Source == "cluster":
		return "", nil
	case strings.HasPrefix(o.Source, "dir:") && len(o.Source) > len("dir:"):
		return strings.TrimPrefix(o.Source, "dir:"), nil
	default:
		return "", usageErrorf(`--source %q: want "cluster" or "dir:PATH"`, o.Source)
	}
}

func usageErrorf(format string, args ...any) error {
	return &exitcode.UsageError{Err: fmt.Errorf(format, args...)}
}
