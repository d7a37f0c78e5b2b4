package taskresult

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/tektoncd/pipeline/pkg/result"

	"github.com/kiln-dev/kiln/pkg/safepath"
	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// MaxResultBytes is the size of a container termination message, which is
// where Tekton's entrypoint puts every result of a step. All results of one
// step share it.
const MaxResultBytes = 4096

// startedAtPlaceholder stands in for the "StartedAt" entry the entrypoint adds
// to every termination message; its value has the length of Tekton's longest
// timestamp ("2006-01-02T15:04:05.000Z07:00").
const startedAtPlaceholder = "0000-00-00T00:00:00.000+00:00"

// resultName is Tekton's rule for result names (v1 ResultNameFormat),
// compiled on first use: every step binary links this package, and a
// pattern compiled at init costs each process start.
var resultName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
})

// ErrResultBudget is wrapped by Results.Write when the results do not fit
// Tekton's termination message.
var ErrResultBudget = errors.New("results exceed Tekton's termination message budget")

// Results collects a step's results and writes them as Tekton expects:
// one file per result under the results directory ($(results.X.path) is
// <dir>/X), holding the bare value with no trailing newline.
//
// The zero value is not usable; call NewResults.
type Results struct {
	dir    string
	values map[string]string
}

// NewResults returns a collector that writes into dir (Tekton: /tekton/results).
func NewResults(dir string) *Results {
	return &Results{dir: dir, values: map[string]string{}}
}

// Set records a result. A later Set of the same name replaces the value.
//
// The value is escaped (termsafe): results are shown by tkn and the
// Dashboard and passed on as the pipeline's results, and some carry text
// from outside (FAILURE holds a registry's error message). Escaping keeps
// an object result valid JSON with the same meaning: json.Marshal already
// escapes C0 controls and replaces bytes that are not UTF-8, so all that
// can remain is a C1 or bidi rune, and its \uNNNN form is JSON's escape of
// the same rune.
func (r *Results) Set(name, value string) error {
	if !resultName().MatchString(name) {
		return fmt.Errorf("setting result %q: name must match %s", name, resultName())
	}
	r.values[name] = termsafe.Escape(value)
	return nil
}

// SetObject records an object result (a Task result of type object): Tekton
// reads the file as one JSON object of string fields. Chains reads
// *ARTIFACT_INPUTS results of this shape, {uri, digest}, as the provenance's
// materials.
func (r *Results) SetObject(name string, fields map[string]string) error {
	b, err := json.Marshal(fields) // sorted keys: the same value every time
	if err != nil {
		return fmt.Errorf("setting result %q: %w", name, err)
	}
	return r.Set(name, string(b))
}

// Names lists the recorded results, sorted.
func (r *Results) Names() []string {
	names := make([]string, 0, len(r.values))
	for n := range r.values {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Size is the length of the termination message the entrypoint would write
// for these results, the quantity Tekton limits to MaxResultBytes.
func (r *Results) Size() int {
	msg := []result.RunResult{{Key: "StartedAt", Value: startedAtPlaceholder, ResultType: result.InternalTektonResultType}}
	for _, n := range r.Names() {
		msg = append(msg, result.RunResult{Key: n, Value: r.values[n], ResultType: result.TaskRunResultType})
	}
	b, err := json.Marshal(msg)
	if err != nil { // RunResult holds only strings and ints
		panic(err)
	}
	return len(b)
}

// Write checks the budget and then writes every result. Nothing is written
// when the results do not fit: a half-written set would let the next task
// run on partial facts.
func (r *Results) Write() error {
	if size := r.Size(); size > MaxResultBytes {
		return fmt.Errorf("writing results %s: %d bytes encoded, limit %d (largest: %s): %w",
			strings.Join(r.Names(), ", "), size, MaxResultBytes, r.largest(), ErrResultBudget)
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	files := map[string][]byte{}
	for _, n := range r.Names() {
		files[n] = []byte(r.values[n])
	}
	// One batch: each result is synced before it replaces the old one, as
	// alone, but the syncs of all of them cost about one.
	if err := safepath.WriteFilesAtomic(r.dir, files, 0o644); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	return nil
}

func (r *Results) largest() string {
	best, size := "", -1
	for _, n := range r.Names() {
		if len(r.values[n]) > size {
			best, size = n, len(r.values[n])
		}
	}
	return fmt.Sprintf("%s, %d bytes", best, size)
}
