package safepath

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readAll reads every regular file of dir as name → content.
func readAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range listDir(t, dir) {
		if fi, err := os.Lstat(filepath.Join(dir, n)); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(b)
	}
	return out
}

// TestWriteFilesAtomicReplacesEveryFileWithMode: old files are replaced
// whole, new ones created, each with the mode asked whatever the umask,
// and no temporary file is left.
func TestWriteFilesAtomicReplacesEveryFileWithMode(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "IMAGE_URL"), []byte(strings.Repeat("old ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"IMAGE_URL": "reg/os", "IMAGE_DIGEST": "sha256:abc", "REUSED": "false", "EMPTY": ""}
	files := map[string][]byte{}
	for n, v := range want {
		files[n] = []byte(v)
	}
	if err := WriteFilesAtomic(dir, files, 0o644); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, readAll(t, dir)); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"EMPTY", "IMAGE_DIGEST", "IMAGE_URL", "REUSED"}, listDir(t, dir)); d != "" {
		t.Errorf("folder entries (-want +got):\n%s", d)
	}
	for n := range want {
		if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v (%v), want 0644", n, fi.Mode().Perm(), err)
		}
	}
}

// TestWriteFilesAtomicFailureChangesNothing: when one file cannot be
// written (a folder or a symlink in its place, a name that is not one
// element), no file changes, the error names the file, and no temporary
// file is left.
func TestWriteFilesAtomicFailureChangesNothing(t *testing.T) {
	for _, c := range []struct {
		name, bad, want string
		setup           func(t *testing.T, dir string)
	}{
		{"folder in a file's place", "B", "B is a d---------, not a regular file", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "B"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink in a file's place", "B", "B is a L---------, not a regular file", func(t *testing.T, dir string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "B")); err != nil {
				t.Fatal(err)
			}
		}},
		{"name with a separator", "../B", `"../B" is not a single file name`, func(*testing.T, string) {}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "A"), []byte("old A"), 0o644); err != nil {
				t.Fatal(err)
			}
			c.setup(t, dir)
			before := listDir(t, dir)
			err := WriteFilesAtomic(dir, map[string][]byte{"A": []byte("new A"), c.bad: []byte("new B"), "C": []byte("new C")}, 0o644)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			if d := cmp.Diff(before, listDir(t, dir)); d != "" {
				t.Errorf("folder entries (-before +after):\n%s", d)
			}
			if d := cmp.Diff(map[string]string{"A": "old A"}, readAll(t, dir)); d != "" {
				t.Errorf("files (-want +got):\n%s", d)
			}
		})
	}
}

// BenchmarkWriteResults writes six results (image-build's) into a folder
// of the test's temporary folder's file system, one WriteFileAtomic each
// (the reference) and in one WriteFilesAtomic.
func BenchmarkWriteResults(b *testing.B) {
	files := map[string][]byte{}
	for i, n := range []string{"IMAGE_URL", "IMAGE_DIGEST", "REUSED", "REUSE_REJECTED", "NODE_CHECK", "BASE_IMAGE_ARTIFACT_INPUTS"} {
		files[n] = []byte(fmt.Sprintf("value %d", i))
	}
	dir := b.TempDir()
	b.Run("one-by-one", func(b *testing.B) {
		for range b.N {
			for n, v := range files {
				if err := WriteFileAtomic(filepath.Join(dir, n), v, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("batch", func(b *testing.B) {
		for range b.N {
			if err := WriteFilesAtomic(dir, files, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
}
