package bootimage

import (
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/work"
)

// The reconciler's lines become one progress line each, and a control
// character inside a line (a MachineSet's name or an error from the
// cluster) is escaped rather than printed.
func TestProgressWriterPrintsOneEscapedLinePerLine(t *testing.T) {
	var b strings.Builder
	w := progressWriter{step.NewProgress(&b, work.StageBootImages)}
	if _, err := w.Write([]byte("patched ms-a\nskipped ms-\x1b[2Jb: owned\n")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "] patched ms-a") || !strings.HasSuffix(lines[1], `] skipped ms-\x1b[2Jb: owned`) {
		t.Errorf("progress lines %q", lines)
	}
}
