package step

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/taskresult"
	"github.com/kiln-dev/kiln/pkg/work"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Options are the flags every stage shares. Stage option structs embed it
// and add the sub-options they need (registry.RegistryOptions, sign.SigningOptions,
// kube.KubeOptions), in the manner of cosign's options package.
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
