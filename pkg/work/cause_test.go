package work

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReadCauseBoundsWhatItReads puts what a hostile step could leave in a
// shared workspace in place of a cause file and checks that report's read
// of it is bounded in size and time: a 200 MiB file gives MaxCauseRead
// bytes and the truncation marker, a FIFO with no writer and a symlink to
// /dev/zero are refused by type at once, and a cause cut inside a
// multi-byte character loses the partial character.
func TestReadCauseBoundsWhatItReads(t *testing.T) {
	const stage = StageRollout
	tests := []struct {
		name  string
		plant func(t *testing.T, path string)
		want  string
	}{
		{"ordinary cause", func(t *testing.T, path string) {
			write(t, path, []byte("rolling out: node w1 degraded\n"))
		}, "rolling out: node w1 degraded"},
		{"200 MiB cause", func(t *testing.T, path string) {
			write(t, path, []byte(strings.Repeat("x", 100)))
			if err := os.Truncate(path, 200<<20); err != nil { // sparse: cheap to make
				t.Fatal(err)
			}
		}, strings.Repeat("x", 100) + strings.Repeat("\x00", MaxCauseRead-100) + TruncatedMarker},
		{"cut inside a character", func(t *testing.T, path string) {
			write(t, path, []byte(strings.Repeat("a", MaxCauseRead-1)+"é and more"))
		}, strings.Repeat("a", MaxCauseRead-1) + TruncatedMarker},
		{"FIFO without a writer", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "(cause file rollout.error: not a regular file)"},
		{"symlink to /dev/zero", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, "(cause file rollout.error: not a regular file)"},
		{"no cause", func(t *testing.T, path string) {}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := Workspace{Root: t.TempDir()}
			if _, err := ws.Ensure(stage); err != nil {
				t.Fatal(err)
			}
			tc.plant(t, ws.CausePath(stage))
			start := time.Now()
			got := ws.ReadCause(stage)
			if d := time.Since(start); d > time.Second {
				t.Errorf("ReadCause took %s", d)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReadCause (-want +got):\n%.2000s", diff)
			}
		})
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The cause file holds the error on one line with its control characters
// escaped; ReadCause returns that line.
func TestCauseIsOneEscapedLine(t *testing.T) {
	ws := Workspace{Root: t.TempDir()}
	err := errors.Join(errors.New("pulling r.io/x: denied \x1b]0;owned\a"), errors.New("second\tline \xff"))
	if werr := ws.WriteCause(StageRollout, err); werr != nil {
		t.Fatal(werr)
	}
	b, rerr := os.ReadFile(ws.CausePath(StageRollout))
	if rerr != nil {
		t.Fatal(rerr)
	}
	want := `pulling r.io/x: denied \x1b]0;owned\a; second line \xff` + "\n"
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("cause file (-want +got):\n%s", diff)
	}
}
