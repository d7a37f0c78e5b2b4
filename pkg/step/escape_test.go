package step

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A progress line holding text from outside stays one line, with its
// control characters escaped: a newline in an argument cannot forge the
// next line of the log.
func TestProgressLineEscapesOutsideText(t *testing.T) {
	var b strings.Builder
	p := NewProgress(&b, StageVerify)
	p.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	p.Printf("pulled %s", "r.io/x\n03:04:06 [verify] verified OK\x1b[2K")
	want := `03:04:05 [verify] pulled r.io/x\n03:04:06 [verify] verified OK\x1b[2K` + "\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("progress line (-want +got):\n%s", diff)
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
