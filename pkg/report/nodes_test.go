package report

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/pkg/work"
)

// TestNodesCountsOnlyThisRun: the timeline's first entries are each
// node's conditions before the run; a node counts as updated only when
// its Updated condition left True (or was not True) and came back during
// the run, so a drift-gate run that moved nothing counts no node.
func TestNodesCountsOnlyThisRun(t *testing.T) {
	ev := func(node, phase, status string) work.Event {
		return work.Event{Node: node, Phase: phase, Status: metav1Status(status)}
	}
	before := []work.Event{
		ev("w0", "Updated", "True"), ev("w0", "UpdatePrepared", "False"),
		ev("w1", "Updated", "True"), ev("w1", "UpdatePrepared", "False"),
	}
	for _, tc := range []struct {
		name        string
		tl          []work.Event
		nodes, rows string
	}{
		{"drift gate stopped before any node moved", before, "0 nodes updated", "2 nodes: (2 unchanged)"},
		{"one node moved", append(append([]work.Event{}, before...),
			ev("w0", "Updated", "False"), ev("w0", "UpdatePrepared", "Unknown"), ev("w0", "UpdatePrepared", "True"),
			ev("w0", "Updated", "True")), "1 node updated", "2 nodes: (1 Updated, 1 unchanged)"},
		{"both moved", append(append([]work.Event{}, before...),
			ev("w0", "Updated", "False"), ev("w1", "Updated", "False"), ev("w0", "Updated", "True"), ev("w1", "Updated", "True")),
			"2 nodes updated", "2 nodes: (2 Updated)"},
		{"mid-update when the watch began, finished in the run", []work.Event{
			ev("w0", "Updated", "False"), ev("w0", "UpdateExecuted", "Unknown"), ev("w0", "Updated", "True")},
			"1 node updated", "1 nodes: (1 Updated)"},
		{"one stuck degraded", append(append([]work.Event{}, before...),
			ev("w1", "Updated", "False"), ev("w1", "NodeDegraded", "True")),
			"0 nodes updated", "2 nodes: (1 NodeDegraded=True, 1 unchanged)"},
		{"empty timeline", []work.Event{}, "0 nodes updated", "no node changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := work.Workspace{Root: t.TempDir()}
			writeJSON(t, filepath.Join(ws.StageDir(work.StageRollout), "timeline.json"), tc.tl)
			got := [2]string{nodesOf(ws), nodeSummary(tc.tl)}
			if diff := cmp.Diff([2]string{tc.nodes, tc.rows}, got); diff != "" {
				t.Errorf("nodesOf, nodeSummary (-want +got):\n%s", diff)
			}
		})
	}
}

func metav1Status(s string) metav1.ConditionStatus { return metav1.ConditionStatus(s) }
