package safepath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Snapshot records every file, folder and symlink under root (path, type,
// and contents or link target), so that a test can show that nothing
// outside a folder changed.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			out[p] = "link:" + l
			return err
		case d.IsDir():
			out[p] = "dir"
		default:
			b, err := os.ReadFile(p)
			out[p] = "file:" + string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWriteFileStaysInside: every hostile relative path is refused with
// an error, and a walk of the whole temporary tree before and after shows
// that nothing outside the output folder changed; local paths are written
// inside it.
func TestWriteFileStaysInside(t *testing.T) {
	cases := []struct {
		rel string
		ok  bool
	}{
		{"a.yaml", true},
		{"machinesets/ns_name.yaml", true},
		{"../x.yaml", false},
		{"machinesets/../../x.yaml", false},
		{"/tmp/x.yaml", false},
		{"", false},
		{"escape/x.yaml", false},     // escape is a symlink to a folder outside
		{"outside-file.yaml", false}, // a symlink to a file outside
		{"escape/../../x.yaml", false},
	}
	for _, tc := range cases {
		t.Run(tc.rel, func(t *testing.T) {
			top := t.TempDir()
			out := filepath.Join(top, "out")
			other := filepath.Join(top, "other")
			for _, d := range []string{out, other} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(other, "victim.yaml"), []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, filepath.Join(out, "escape")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(other, "victim.yaml"), filepath.Join(out, "outside-file.yaml")); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, top)
			err := WriteFile(out, tc.rel, []byte("written"), 0o644)
			after := snapshot(t, top)
			for p := range after {
				if strings.HasPrefix(p, out+string(filepath.Separator)) {
					delete(after, p)
					delete(before, p)
				}
			}
			if d := cmp.Diff(before, after); d != "" {
				t.Errorf("outside the output folder changed (-before +after):\n%s", d)
			}
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if b, err := os.ReadFile(filepath.Join(out, tc.rel)); err != nil || string(b) != "written" {
					t.Fatalf("read back %q, %v", b, err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestElement(t *testing.T) {
	for name, ok := range map[string]bool{"a": true, "ns_name.yaml": true, "": false, ".": false, "..": false, "a/b": false, `a\b`: false, "a\x00": false} {
		if err := Element(name); (err == nil) != ok {
			t.Errorf("Element(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}
