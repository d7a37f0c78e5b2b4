package safepath

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// listDir names every entry of dir, temporary files included.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestWriteFileAtomicReplacesWholeFileWithMode: a longer file replaced by
// a shorter one reads back as exactly the new bytes, gets the requested
// mode whatever the umask and the old mode, and leaves no temporary file.
func TestWriteFileAtomicReplacesWholeFileWithMode(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte(strings.Repeat("old content ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		data string
		perm fs.FileMode
	}{{"{\"new\": true}\n", 0o644}, {"secret\n", 0o600}, {"", 0o640}} {
		if err := WriteFileAtomic(path, []byte(tc.data), tc.perm); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tc.data, string(b)); d != "" {
			t.Errorf("content (-want +got):\n%s", d)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != tc.perm {
			t.Errorf("mode %v, want %v", fi.Mode().Perm(), tc.perm)
		}
		if d := cmp.Diff([]string{"state.json"}, listDir(t, dir)); d != "" {
			t.Errorf("folder entries (-want +got):\n%s", d)
		}
	}
}

// TestWriteAtomicFailingWriterLeavesOldFile: a writer that fails after
// writing half its content leaves the old file untouched (or no file when
// there was none), returns its error, and leaves no temporary file.
func TestWriteAtomicFailingWriterLeavesOldFile(t *testing.T) {
	boom := errors.New("disk full")
	half := func(w io.Writer) error {
		if _, err := io.WriteString(w, "half of the new"); err != nil {
			return err
		}
		return boom
	}
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh")
	if err := WriteAtomic(fresh, 0o644, half); !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
	if _, err := os.Lstat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed first write left %s: %v", fresh, err)
	}
	kept := filepath.Join(dir, "kept")
	if err := os.WriteFile(kept, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(kept, 0o644, half); !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
	b, err := os.ReadFile(kept)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff("old", string(b)); d != "" {
		t.Errorf("old file (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"kept"}, listDir(t, dir)); d != "" {
		t.Errorf("folder entries after failures (-want +got):\n%s", d)
	}
}

// TestWriteFileAtomicErrorsNameThePath: a missing folder and a folder in
// place of the file are errors that name the path, and the folder is left
// as it was.
func TestWriteFileAtomicErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing", "f"), filepath.Join(dir, "sub")} {
		err := WriteFileAtomic(path, []byte("x"), 0o644)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("WriteFileAtomic(%s) = %v, want an error naming the path", path, err)
		}
	}
	if d := cmp.Diff([]string{"sub"}, listDir(t, dir)); d != "" {
		t.Errorf("folder entries (-want +got):\n%s", d)
	}
}
