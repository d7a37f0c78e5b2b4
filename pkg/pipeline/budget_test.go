package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/kiln-dev/kiln/pkg/taskresult"
)

// FuzzResultBudget: the executor refuses exactly the results kiln-steps'
// own budget check (taskresult.Results.Size) counts as over Tekton's limit, for
// any values, so a step that passes its check is never failed locally.
func FuzzResultBudget(f *testing.F) {
	f.Add("small", 10, "x")
	f.Add("quote\"and\\back", 3990, "y")
	f.Add("\x00\xff<>&", 4000, "")
	f.Fuzz(func(t *testing.T, a string, n int, b string) {
		if n < 0 || n > 9000 {
			return
		}
		values := map[string]string{"A": a, "B": strings.Repeat("b", n) + b}
		dir := t.TempDir()
		tr := &taskRun{name: "t", spec: &tektonv1.TaskSpec{Results: []tektonv1.TaskResult{{Name: "A"}, {Name: "B"}, {Name: "C"}}}}
		want := taskresult.NewResults(dir)
		for k, v := range values {
			if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := want.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		got, err := readResults(tr, dir, "s")
		if over := want.Size() > MaxResultBytes; over != (err != nil) {
			t.Fatalf("size %d: executor error %v", want.Size(), err)
		}
		if err == nil && (got["A"] != a || got["B"] != values["B"] || len(got) != 2) {
			t.Fatalf("results %q", got)
		}
	})
}
