package step

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/work"
)

// A progress line holding text from outside stays one line, with its
// control characters escaped: a newline in an argument cannot forge the
// next line of the log.
func TestProgressLineEscapesOutsideText(t *testing.T) {
	var b strings.Builder
	p := NewProgress(&b, work.StageVerify)
	p.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	p.Printf("pulled %s", "r.io/x\n03:04:06 [verify] verified OK\x1b[2K")
	want := `03:04:05 [verify] pulled r.io/x\n03:04:06 [verify] verified OK\x1b[2K` + "\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("progress line (-want +got):\n%s", diff)
	}
}
