package manifests_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/manifests"
)

// TestWalkReadsOnlyRegularFiles: a FIFO, a device, a socket or a symlink
// to one of them named like a manifest is refused by its type, before it
// is opened, within a second, naming the file and its type; an oversized
// file is refused by the cap. A symlink to a regular file is read.
func TestWalkReadsOnlyRegularFiles(t *testing.T) {
	cases := []struct {
		name  string
		make  func(t *testing.T, dir string) string // returns the file's name
		want  string
		valid bool
	}{
		{"FIFO", func(t *testing.T, dir string) string {
			mkfifo(t, filepath.Join(dir, "pipe.yaml"))
			return "pipe.yaml"
		}, "not a regular file (named pipe)", false},
		{"symlink to a FIFO", func(t *testing.T, dir string) string {
			p := filepath.Join(t.TempDir(), "p")
			mkfifo(t, p)
			return symlink(t, dir, "pipe.yaml", p)
		}, "not a regular file", false},
		{"symlink to /dev/zero", func(t *testing.T, dir string) string {
			return symlink(t, dir, "zero.yaml", "/dev/zero")
		}, "zero.yaml (symlink to /dev/zero): not a regular file (character device)", false},
		{"socket", func(t *testing.T, dir string) string {
			l, err := net.Listen("unix", filepath.Join(dir, "s.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return "s.yaml"
		}, "not a regular file (socket)", false},
		{"directory named like a manifest, through a symlink", func(t *testing.T, dir string) string {
			return symlink(t, dir, "d.yaml", t.TempDir())
		}, "not a regular file (directory)", false},
		{"file over the cap", func(t *testing.T, dir string) string {
			f, err := os.Create(filepath.Join(dir, "big.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(manifests.MaxFileBytes + 1); err != nil { // sparse
				t.Fatal(err)
			}
			return "big.yaml"
		}, "larger than 16777216 bytes, the limit for one manifest file", false},
		{"symlink to a regular file", func(t *testing.T, dir string) string {
			target := filepath.Join(t.TempDir(), "cm")
			if err := os.WriteFile(target, []byte(cmHead+"metadata: {name: a}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return symlink(t, dir, "cm.yaml", target)
		}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := tc.make(t, dir)
			start := time.Now()
			n := 0
			err := manifests.Walk(dir, func(runtime.Object) error { n++; return nil })
			if took := time.Since(start); took > time.Second {
				t.Errorf("took %s, want under a second", took)
			}
			if tc.valid {
				if err != nil || n != 1 {
					t.Fatalf("read %d objects, error %v; want 1 and no error", n, err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, want := range []string{filepath.Join(dir, file), tc.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\ndoes not contain %q", err, want)
				}
			}
			if exitcode.CodeOf(err) != exitcode.ExitInputRejected {
				t.Errorf("exit code %d, want the rejected-input code", exitcode.CodeOf(err))
			}
		})
	}
}

// TestDecodeCapsItsInput: a stream (such as /dev/zero) is read through
// the same cap as a file and refused past it.
func TestDecodeCapsItsInput(t *testing.T) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = manifests.Decode("zero", f, func(runtime.Object) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "zero: larger than 16777216 bytes") {
		t.Fatalf("error %v", err)
	}
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, dir, name, target string) string {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	return name
}
