package step

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// Progress prints one line per event, prefixed with the stage, so that the
// Tekton Dashboard's log view reads as a timeline. Safe for concurrent use.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	stage string
	now   func() time.Time
}

// NewProgress returns a printer for stage writing to w.
func NewProgress(w io.Writer, stage string) *Progress {
	return &Progress{w: w, stage: stage, now: time.Now}
}

// Printf prints one progress line. Callers must not pass secrets. The
// line is escaped (termsafe): arguments carry names and messages from
// outside, and a newline or an escape sequence in one could forge or hide
// a line of the log.
func (p *Progress) Printf(format string, args ...any) {
	msg := termsafe.Escape(fmt.Sprintf(format, args...))
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s [%s] %s\n", p.now().UTC().Format("15:04:05"), p.stage, msg)
}
