package rollout_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kiln-dev/kiln/pkg/rollout"
)

// lockedBuffer is the rollout log as a step's stdout receives it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

var (
	timestamped = regexp.MustCompile(`^\d\d:\d\d:\d\d `)
	tableHeader = regexp.MustCompile(`^\d\d:\d\d:\d\d nodes of the pool \((\d+)\):$`)
	tableRow    = regexp.MustCompile(`^  \S`)
	// continued is a wrapped entry's or a table detail's next line.
	continued = regexp.MustCompile(`^   +\S`)
)

// TestRolloutLogOnFiftyNodes rolls an image out to a 50-node pool (a quarter
// at a time) and reads the log as a user would: every line but a table's rows
// is timestamped and within 100 columns; a node's phase changes are one
// line each, so the log grows with the number of transitions and the
// table is printed only at the start and the end of a rollout shorter
// than rollout.TableEvery; the last line says how many nodes run which
// image and config.
func TestRolloutLogOnFiftyNodes(t *testing.T) {
	h := newHarness(t, 5*time.Millisecond)
	const nodes = 50
	h.pool("fifty", nodes)
	cfg := h.config("fifty", image(50))
	quarter := intstr.FromInt32(nodes / 4)
	cfg.MaxUnavailable, cfg.Timeout = &quarter, 3*time.Minute
	var log lockedBuffer
	cfg.Out = &log
	start := time.Now()
	res, err := rollout.Run(context.Background(), cfg)
	elapsed := time.Since(start)
	out := log.b.String()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	tables, rows, transitions, more := 0, 0, 0, 0
	for _, l := range lines {
		switch {
		case len([]rune(l)) > 100:
			t.Errorf("line wider than 100 columns: %q", l)
		case tableHeader.MatchString(l):
			tables++
		case tableRow.MatchString(l):
			rows++
		case continued.MatchString(l):
			more++
		case !timestamped.MatchString(l):
			t.Errorf("line without a timestamp: %q", l)
		case strings.Contains(l, " fifty-"):
			transitions++
		}
	}
	maxTables := 2 + int(elapsed/rollout.TableEvery)
	if tables < 2 || tables > maxTables {
		t.Errorf("%d node tables in %v, want 2 to %d", tables, elapsed, maxTables)
	}
	if rows != tables*(nodes+1) {
		t.Errorf("%d table rows for %d tables of %d nodes", rows, tables, nodes)
	}
	// Each node changes phase about a dozen times; every change is a line,
	// never more than one, and nothing else grows with the node count.
	if transitions < nodes*6 || transitions > len(res.Timeline) {
		t.Errorf("%d transition lines for %d nodes and %d timeline events", transitions, nodes, len(res.Timeline))
	}
	if other := len(lines) - rows - tables - transitions - more; other > 10 {
		t.Errorf("%d lines other than tables and transitions:\n%s", other, out)
	}
	_, digest, _ := strings.Cut(image(50), "@")
	want := fmt.Sprintf("%d/%d nodes on %s (%s)", nodes, nodes, digest, res.Rendered)
	// The closing entry is wrapped, never cut: its lines rejoin to it.
	entry := lines[len(lines)-1]
	for i := len(lines) - 1; i > 0 && continued.MatchString(lines[i]); i-- {
		entry = lines[i-1] + " " + strings.TrimSpace(entry)
	}
	if !timestamped.MatchString(entry) || entry[9:] != want {
		t.Errorf("closing entry %q, want %q", entry, want)
	}
	t.Logf("%d lines: %d tables, %d transition lines, %d timeline events, in %v", len(lines), tables, transitions, len(res.Timeline), elapsed.Round(time.Millisecond))
}
