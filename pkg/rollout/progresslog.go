package rollout

import (
	"fmt"
	"io"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/pkg/termsafe"
	"github.com/kiln-dev/kiln/pkg/textwrap"
	"github.com/kiln-dev/kiln/pkg/work"
)

// TableEvery is the least time between two node tables in the rollout
// log: between tables, each phase change is one line, so the log grows
// with the number of transitions, not with tables times nodes.
const TableEvery = 30 * time.Second

// logWidth bounds the log's lines: the Tekton Dashboard's and tkn's log
// panes wrap longer ones.
const logWidth = 100

// progressLog writes the rollout log: timestamped lines for the rollout's
// decisions and for each node's phase changes, and a compact node table
// when the rollout starts watching, at most every TableEvery after that,
// and at the end.
type progressLog struct {
	out       io.Writer
	now       func() time.Time
	lastTable time.Time
}

func newProgressLog(out io.Writer) *progressLog {
	return &progressLog{out: out, now: time.Now}
}

// printf writes one timestamped entry, escaped (MCO's messages and object
// names come from the cluster) and wrapped within logWidth at spaces as
// the report wraps (pkg/textwrap): a config name or digest is never cut,
// and continuation lines are indented under the text. Each entry is one
// Write, so entries of concurrent writers stay whole.
func (l *progressLog) printf(format string, args ...any) {
	if l == nil || l.out == nil {
		return
	}
	stamp := l.now().UTC().Format("15:04:05") + " "
	msg := termsafe.Escape(strings.TrimRight(fmt.Sprintf(format, args...), "\n"))
	var b strings.Builder
	for i, line := range textwrap.Wrap(msg, logWidth-len(stamp)) {
		if i == 0 {
			b.WriteString(stamp)
		} else {
			b.WriteString(strings.Repeat(" ", len(stamp)))
		}
		b.WriteString(line + "\n")
	}
	if b.Len() == 0 {
		b.WriteString(strings.TrimRight(stamp, " ") + "\n")
	}
	_, _ = io.WriteString(l.out, b.String())
}

// transitions prints the phase changes a user follows: a parent phase
// starting (Unknown) or done (True), the node needing an update (Updated
// False) and the node degrading. Child phases show in the table's detail;
// the resets to False that end an update are not news and are left out.
func (l *progressLog) transitions(evs []work.Event) {
	for _, e := range evs {
		what := ""
		switch {
		case e.Phase == string(mcfgv1.MachineConfigNodeNodeDegraded) && e.Status == metav1.ConditionTrue:
			what = "DEGRADED"
		case !isParent(e.Phase):
			continue
		case e.Status == metav1.ConditionUnknown:
			what = "started"
		case e.Status == metav1.ConditionTrue:
			what = "done"
		case e.Phase == string(mcfgv1.MachineConfigNodeUpdated):
			what = "needs an update"
		default:
			continue
		}
		// MCO's reason often repeats the phase; it is shown when it says
		// more (Cordoned, RebootedNode). MCO's messages run to hundreds of
		// columns and end with the config name: printf wraps them.
		reason := ""
		if e.Reason != "" && e.Reason != e.Phase {
			reason = " (" + e.Reason + ")"
		}
		l.printf("%s %s %s%s: %s", e.Node, e.Phase, what, reason, e.Message)
	}
}

// table prints the node table when force is set, or when none was
// printed for TableEvery.
func (l *progressLog) table(t *Tracker, force bool) {
	if l == nil || l.out == nil {
		return
	}
	now := l.now()
	if !force && !l.lastTable.IsZero() && now.Sub(l.lastTable) < TableEvery {
		return
	}
	l.lastTable = now
	type row struct{ node, state, config, detail string }
	rows := []row{{"NODE", "STATE", "CONFIG", ""}}
	w := [3]int{}
	for _, mcn := range t.Nodes() {
		state, detail := nodeState(mcn)
		rows = append(rows, row{termsafe.Escape(mcn.Name), state, termsafe.Escape(currentConfig(mcn)), termsafe.Escape(detail)})
	}
	for _, r := range rows {
		w = [3]int{max(w[0], runes(r.node)), max(w[1], runes(r.state)), max(w[2], runes(r.config))}
	}
	var out strings.Builder // one Write per table, so log lines stay whole
	fmt.Fprintf(&out, "%s nodes of the pool (%d):\n", now.UTC().Format("15:04:05"), len(t.nodes))
	indent := strings.Repeat(" ", detailIndent)
	for _, r := range rows {
		// A node name and a config name take up to 100 columns together:
		// a row that does not fit is wrapped between them, never cut.
		head := fmt.Sprintf("  %-*s  %-*s  %s", w[0], r.node, w[1], r.state, r.config)
		if runes(head) <= logWidth {
			out.WriteString(strings.TrimRight(head, " ") + "\n")
		} else {
			for i, line := range textwrap.Wrap(head, logWidth-detailIndent) {
				out.WriteString(map[bool]string{true: "  ", false: indent}[i == 0] + line + "\n")
			}
		}
		// The detail (MCO's message, often hundreds of columns) goes below
		// its row: beside it, after two names, it would get a few columns.
		for _, line := range textwrap.Wrap(r.detail, logWidth-detailIndent) {
			out.WriteString(indent + line + "\n")
		}
	}
	_, _ = io.WriteString(l.out, out.String())
}

// detailIndent indents a node's detail, and a wrapped row's rest, below
// the row in the node table.
const detailIndent = 6

// nodeState is one word for where a node is, and what it is doing. MCO
// sets every phase but Updated back to False once an update is done, so
// the phases alone would read as if the node had gone back: Updated True
// is "Updated", whatever the others say.
func nodeState(mcn *mcfgv1.MachineConfigNode) (string, string) {
	if c, ok := nodeDegraded(mcn); ok {
		return "Degraded", c.Message
	}
	detail := inProgress(mcn)
	for i := len(ParentPhases) - 1; i >= 1; i-- {
		if conditionStatus(mcn, ParentPhases[i]) == string(metav1.ConditionUnknown) {
			return ParentPhases[i], detail
		}
	}
	if conditionStatus(mcn, string(mcfgv1.MachineConfigNodeUpdated)) == string(metav1.ConditionTrue) {
		return "Updated", detail
	}
	for i := len(ParentPhases) - 1; i >= 1; i-- {
		if conditionStatus(mcn, ParentPhases[i]) == string(metav1.ConditionTrue) {
			return ParentPhases[i], detail
		}
	}
	return "Pending", detail
}

func currentConfig(mcn *mcfgv1.MachineConfigNode) string {
	if mcn.Status.ConfigVersion == nil || mcn.Status.ConfigVersion.Current == "" {
		return "-"
	}
	return mcn.Status.ConfigVersion.Current
}

func runes(s string) int { return len([]rune(s)) }
