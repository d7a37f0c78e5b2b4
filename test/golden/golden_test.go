package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recorder is a testing.TB that keeps what Check reports instead of
// failing the test that runs it.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// Fatalf ends the goroutine, as testing.T's does; see run.
func (r *recorder) Fatalf(format string, args ...any) {
	r.errors = append(r.errors, "fatal: "+fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// run calls f with a fresh recorder on its own goroutine, so that Fatalf
// stops f and nothing after it, and returns the reports with go-cmp's
// non-breaking spaces made plain.
func run(t *testing.T, f func(tb testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	for i := range r.errors {
		r.errors[i] = strings.ReplaceAll(r.errors[i], "\u00a0", " ")
	}
	return r.errors
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckReportsOnlyTheChangedLines: the same bytes pass; one changed
// line among many is reported as a -want/+got diff naming the file, and
// the unchanged lines far from it are not printed.
func TestCheckReportsOnlyTheChangedLines(t *testing.T) {
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("line %02d", i))
	}
	want := strings.Join(lines, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "out.golden")
	writeFile(t, path, want)

	if d := cmp.Diff([]string(nil), run(t, func(tb testing.TB) { Check(tb, path, []byte(want)) })); d != "" {
		t.Errorf("identical output reported (-want +got):\n%s", d)
	}

	lines[20] = "line twenty"
	errs := run(t, func(tb testing.TB) { Check(tb, path, []byte(strings.Join(lines, "\n")+"\n")) })
	if len(errs) != 1 {
		t.Fatalf("reports: %q, want one", errs)
	}
	msg := errs[0]
	for _, s := range []string{path, "-want +got", "-update", "- \tline 20", "+ \tline twenty"} {
		if !strings.Contains(msg, s) {
			t.Errorf("report lacks %q:\n%s", s, msg)
		}
	}
	if strings.Contains(msg, "line 01") || strings.Contains(msg, "line 39") {
		t.Errorf("report prints lines far from the change:\n%s", msg)
	}
}

// TestCheckMissingFileNamesUpdate: a missing golden file is a fatal
// report that says how to write it.
func TestCheckMissingFileNamesUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.golden")
	errs := run(t, func(tb testing.TB) { Check(tb, path, []byte("x")) })
	if len(errs) != 1 || !strings.HasPrefix(errs[0], "fatal: ") || !strings.Contains(errs[0], "go test -update") {
		t.Errorf("reports %q, want one fatal naming go test -update", errs)
	}
}

// TestCheckTreeReportsChangedMissingAndExtraFiles: a changed file, a file
// only in want and a file only in the output are each marked in the one
// diff, an unchanged file is not; equal trees pass.
func TestCheckTreeReportsChangedMissingAndExtraFiles(t *testing.T) {
	want, got := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(want, "registries.conf"), "a\n")
	writeFile(t, filepath.Join(got, "registries.conf"), "a\n")
	writeFile(t, filepath.Join(want, "certs.d", "x", "ca.crt"), "pem\n")
	writeFile(t, filepath.Join(got, "certs.d", "x", "ca.crt"), "pem\n")
	if d := cmp.Diff([]string(nil), run(t, func(tb testing.TB) { CheckTree(tb, got, want) })); d != "" {
		t.Errorf("equal trees reported (-want +got):\n%s", d)
	}

	writeFile(t, filepath.Join(got, "registries.conf"), "b\n")
	writeFile(t, filepath.Join(want, "only-want"), "w\n")
	writeFile(t, filepath.Join(got, "certs.d", "y", "ca.crt"), "new\n")
	errs := run(t, func(tb testing.TB) { CheckTree(tb, got, want) })
	if len(errs) != 1 {
		t.Fatalf("reports: %q, want one", errs)
	}
	for _, s := range []string{"- \t\"registries.conf\"", "+ \t\"registries.conf\"", "- \t\"only-want\"", "+ \t\"certs.d/y/ca.crt\""} {
		if !strings.Contains(errs[0], s) {
			t.Errorf("report lacks %q:\n%s", s, errs[0])
		}
	}
	if strings.Contains(errs[0], "- \t\"certs.d/x/ca.crt\"") || strings.Contains(errs[0], "+ \t\"certs.d/x/ca.crt\"") {
		t.Errorf("report marks the unchanged certs.d/x/ca.crt:\n%s", errs[0])
	}
}
