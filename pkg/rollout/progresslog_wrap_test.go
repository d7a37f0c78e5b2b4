package rollout

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/pkg/work"
)

const wrapCfg = "rendered-worker-0123456789abcdef0123456789abcdef"

// TestTransitionWrapsMCOMessage: a transition with MCO's long message is
// wrapped within 100 columns at spaces, continuation lines indented under
// the text, the config name whole, control characters escaped; nothing is
// lost.
func TestTransitionWrapsMCOMessage(t *testing.T) {
	var out bytes.Buffer
	l := &progressLog{out: &out, now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
	msg := "Node ip-10-0-1-23.ec2.internal update to config " + wrapCfg + " is in progress: " +
		strings.Repeat("drained pod openshift-monitoring/prometheus-k8s-0 ", 5) + "\x1b[2J then update to config " + wrapCfg
	l.transitions([]work.Event{{Node: "ip-10-0-1-23.ec2.internal", Phase: string(mcfgv1.MachineConfigNodeUpdateExecuted), Status: metav1.ConditionUnknown, Message: msg}})
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("a %d-column entry in %d lines:\n%s", len(msg), len(lines), out.String())
	}
	var words []string
	for i, line := range lines {
		if n := len([]rune(line)); n > logWidth {
			t.Errorf("line %d is %d columns: %q", i+1, n, line)
		}
		prefix := "03:04:05 "
		if i > 0 {
			prefix = strings.Repeat(" ", 9)
		}
		if !strings.HasPrefix(line, prefix) || line[len(prefix)] == ' ' {
			t.Errorf("line %d %q does not start with %q", i+1, line, prefix)
		}
		words = append(words, strings.Fields(line[len(prefix):])...)
	}
	if c := strings.Count(out.String(), wrapCfg); c != 2 {
		t.Errorf("the config name appears whole %d times, want 2:\n%s", c, out.String())
	}
	if strings.Contains(out.String(), "\x1b") || !strings.Contains(out.String(), `\x1b[2J`) {
		t.Errorf("ESC is not escaped:\n%q", out.String())
	}
	want := strings.Fields("ip-10-0-1-23.ec2.internal UpdateExecuted started: " + strings.ReplaceAll(msg, "\x1b", `\x1b`))
	if diff := cmp.Diff(want, words); diff != "" {
		t.Errorf("words of the entry (-want +got):\n%s", diff)
	}
}

// TestTableWrapsDetail: a node's detail (MCO's message) is wrapped below
// its row; a row whose names do not fit in 100 columns wraps between them;
// node and config names stay whole and every line is within 100 columns.
func TestTableWrapsDetail(t *testing.T) {
	long := strings.Repeat("Draining node: pod openshift-ingress/router-default-5f7 cannot be evicted yet ", 4)
	drained := string(mcfgv1.MachineConfigNodeUpdateDrained)
	for _, tc := range []struct {
		name, node string
		rowLines   int
	}{
		{"short node name", "w0", 1},
		{"node and config names wider than the pane", "ip-10-0-129-201.us-east-2.compute.internal", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker()
			tr.Observe(&mcfgv1.MachineConfigNode{
				ObjectMeta: metav1.ObjectMeta{Name: tc.node},
				Status: mcfgv1.MachineConfigNodeStatus{
					ConfigVersion: &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Current: wrapCfg},
					Conditions: []metav1.Condition{
						{Type: string(mcfgv1.MachineConfigNodeUpdateExecuted), Status: metav1.ConditionUnknown},
						{Type: drained, Status: metav1.ConditionUnknown, Message: long},
					},
				},
			})
			var out bytes.Buffer
			l := &progressLog{out: &out, now: time.Now}
			l.table(tr, true)
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			for i, line := range lines {
				if n := len([]rune(line)); n > logWidth {
					t.Errorf("line %d is %d columns: %q", i+1, n, line)
				}
			}
			if len(lines) < 3+tc.rowLines {
				t.Fatalf("table in %d lines:\n%s", len(lines), out.String())
			}
			row := strings.Join(lines[2:2+tc.rowLines], " ")
			if got, want := strings.Fields(row), []string{tc.node, "UpdateExecuted", wrapCfg}; !cmp.Equal(got, want) {
				t.Errorf("row %q, want the node, state and config names whole: %q", row, want)
			}
			var detail []string
			for _, line := range lines[2+tc.rowLines:] {
				if !strings.HasPrefix(line, strings.Repeat(" ", detailIndent)) {
					t.Errorf("detail line %q is not indented %d", line, detailIndent)
				}
				detail = append(detail, strings.Fields(line)...)
			}
			if diff := cmp.Diff(strings.Fields(drained+": "+long), detail); diff != "" {
				t.Errorf("detail below the row (-want +got):\n%s", diff)
			}
		})
	}
}
