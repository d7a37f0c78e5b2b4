package rollout

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// printf writes one timestamped line. Each line is one Write, so lines of
// concurrent writers stay whole. Decisions and the closing line are never
// cut (a digest and a config name take 120 columns); transitions are.
func (l *progressLog) printf(format string, args ...any) {
	if l == nil || l.out == nil {
		return
	}
	line := l.now().UTC().Format("15:04:05") + " " + fmt.Sprintf(format, args...)
	_, _ = io.WriteString(l.out, strings.TrimRight(line, "\n")+"\n")
}

// transitions prints the phase changes a user follows: a parent phase
// starting (Unknown) or done (True), the node needing an update (Updated
// False) and the node degrading. Child phases show in the table's detail;
// the resets to False that end an update are not news and are left out.
func (l *progressLog) transitions(evs []Event) {
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
		// more (Cordoned, RebootedNode). The timestamp takes 9 columns and
		// MCO's messages can be long: the line is cut at the pane's width.
		reason := ""
		if e.Reason != "" && e.Reason != e.Phase {
			reason = " (" + e.Reason + ")"
		}
		l.printf("%s", clip(fmt.Sprintf("%s %s %s%s: %s", e.Node, e.Phase, what, reason, e.Message), logWidth-9))
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
	var buf bytes.Buffer // one Write per table, so log lines stay whole
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tCONFIG\tDETAIL")
	for _, mcn := range t.Nodes() {
		state, detail := nodeState(mcn)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", mcn.Name, state, currentConfig(mcn), detail)
	}
	_ = tw.Flush()
	var out strings.Builder
	fmt.Fprintf(&out, "%s nodes of the pool (%d):\n", now.UTC().Format("15:04:05"), len(t.nodes))
	for line := range strings.SplitSeq(strings.TrimRight(buf.String(), "\n"), "\n") {
		out.WriteString("  " + clip(strings.TrimRight(line, " "), logWidth-2) + "\n")
	}
	_, _ = io.WriteString(l.out, out.String())
}

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

// clip cuts s to n columns, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
