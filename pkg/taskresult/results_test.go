package taskresult

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/result"
)

// An object result is what Tekton parses as one: the file holds a JSON
// object that Tekton's ResultValue decodes with type object.
func TestResultsSetObject(t *testing.T) {
	dir := t.TempDir()
	r := NewResults(dir)
	digest := "sha256:" + strings.Repeat("b", 64)
	if err := r.SetObject("BASE_IMAGE_ARTIFACT_INPUTS", map[string]string{"uri": "quay.io/x/base", "digest": digest}); err != nil {
		t.Fatal(err)
	}
	if err := r.SetObject("bad name!", nil); err == nil {
		t.Error("SetObject accepted an invalid result name")
	}
	if err := r.Write(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "BASE_IMAGE_ARTIFACT_INPUTS"))
	if err != nil {
		t.Fatal(err)
	}
	var v tektonv1.ResultValue
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("Tekton cannot decode %s: %v", b, err)
	}
	if v.Type != tektonv1.ParamTypeObject || v.ObjectVal["uri"] != "quay.io/x/base" || v.ObjectVal["digest"] != digest {
		t.Errorf("decoded %+v from %s, want an object with uri and digest", v, b)
	}
}

func TestResultsWrite(t *testing.T) {
	dir := t.TempDir()
	r := NewResults(dir)
	for name, v := range map[string]string{
		"IMAGE_URL":    "registry.example/kiln/worker@sha256:" + strings.Repeat("a", 64),
		"IMAGE_DIGEST": "sha256:" + strings.Repeat("a", 64),
		"REUSED":       "false",
	} {
		if err := r.Set(name, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Write(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "REUSED"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "false" { // no trailing newline: Tekton passes the bytes as is
		t.Errorf("REUSED: got %q, want %q", got, "false")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("files in results dir: got %d, want 3 (no temporary files left)", len(entries))
	}
}

func TestResultsBudget(t *testing.T) {
	cases := []struct {
		name    string
		values  map[string]string
		wantErr bool
	}{
		{"empty", map[string]string{}, false},
		{"small", map[string]string{"A": "x"}, false},
		{"one large value under the limit", map[string]string{"BIG": strings.Repeat("x", 3900)}, false},
		{"one value over the limit", map[string]string{"BIG": strings.Repeat("x", 4096)}, true},
		{"shared budget exceeded by two results", map[string]string{"A": strings.Repeat("x", 2100), "B": strings.Repeat("y", 2100)}, true},
		// JSON escaping counts: 800 quotes become 1600 bytes each side.
		{"escaping counts", map[string]string{"Q": strings.Repeat(`"`, 2100)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "results")
			r := NewResults(dir)
			for k, v := range tc.values {
				if err := r.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			err := r.Write()
			if tc.wantErr != (err != nil) {
				t.Fatalf("Write: err = %v, wantErr %v (size %d)", err, tc.wantErr, r.Size())
			}
			if err != nil {
				if !errors.Is(err, ErrResultBudget) {
					t.Errorf("error does not wrap ErrResultBudget: %v", err)
				}
				if _, statErr := os.Stat(dir); !os.IsNotExist(statErr) {
					t.Errorf("results dir written despite the failed check")
				}
			}
		})
	}
}

// TestResultsSizeMatchesTekton checks Size against the message Tekton's
// entrypoint encodes, so the budget is the real one.
func TestResultsSizeMatchesTekton(t *testing.T) {
	r := NewResults(t.TempDir())
	_ = r.Set("IMAGE_DIGEST", "sha256:abc")
	_ = r.Set("IMAGE_URL", "r/x@sha256:abc")
	msg, err := json.Marshal([]result.RunResult{
		{Key: "StartedAt", Value: "2026-11-22T03:04:05.123+00:00", ResultType: result.InternalTektonResultType},
		{Key: "IMAGE_DIGEST", Value: "sha256:abc", ResultType: result.TaskRunResultType},
		{Key: "IMAGE_URL", Value: "r/x@sha256:abc", ResultType: result.TaskRunResultType},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Size() != len(msg) {
		t.Errorf("Size: got %d, Tekton's message is %d bytes", r.Size(), len(msg))
	}
}

func TestResultsName(t *testing.T) {
	r := NewResults(t.TempDir())
	for _, bad := range []string{"", "-x", "x-", "a b", "a/b"} {
		if err := r.Set(bad, "v"); err == nil {
			t.Errorf("Set(%q): want error", bad)
		}
	}
	for _, good := range []string{"IMAGE_URL", "a", "kmod.image-1"} {
		if err := r.Set(good, "v"); err != nil {
			t.Errorf("Set(%q): %v", good, err)
		}
	}
}

// Result values are stored escaped (termsafe), and an object result stays
// the JSON of the same object.
func TestResultValuesAreTerminalSafe(t *testing.T) {
	dir := t.TempDir()
	r := NewResults(dir)
	if err := r.Set("FAILURE", "denied \x1b[2J\a"); err != nil {
		t.Fatal(err)
	}
	obj := map[string]string{"uri": "oci://r.io/x\u202e\u0085", "digest": "sha256:1"}
	if err := r.SetObject("BASE", obj); err != nil {
		t.Fatal(err)
	}
	if err := r.Write(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "FAILURE"))
	if diff := cmp.Diff(`denied \x1b[2J\a`, string(got)); diff != "" {
		t.Errorf("FAILURE (-want +got):\n%s", diff)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "BASE"))
	var back map[string]string
	if err := json.Unmarshal(b, &back); err != nil || strings.ContainsRune(string(b), '\u202e') {
		t.Fatalf("BASE %q: %v", b, err)
	}
	if diff := cmp.Diff(obj, back); diff != "" {
		t.Errorf("BASE decoded (-want +got):\n%s", diff)
	}
}
