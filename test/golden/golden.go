package golden

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with the output")

// Update says whether -update was given, for tests whose golden data is
// not one file (an error text written next to its case, a generated
// folder of docs).
func Update() bool { return *update }

// Check compares got with the file at path; with -update it writes got
// there first, creating the parent folders.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		write(t, path, got)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file: %v (go test -update writes it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, d)
	}
}

// CheckTree compares every regular file under the folder got with the
// folder want: the same names with the same bytes. With -update it
// replaces want with a copy of got.
func CheckTree(t testing.TB, got, want string) {
	t.Helper()
	if *update {
		if err := os.RemoveAll(want); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(want, os.DirFS(got)); err != nil {
			t.Fatal(err)
		}
		return
	}
	if d := cmp.Diff(readTree(t, want), readTree(t, got)); d != "" {
		t.Errorf("%s differs from the output (-want +got; go test -update rewrites it):\n%s", want, d)
	}
}

func write(t testing.TB, path string, got []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, got, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readTree maps each file's slash path under root to its content, as a
// string so that a diff shows lines.
func readTree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
