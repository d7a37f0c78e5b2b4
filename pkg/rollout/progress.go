package rollout

import (
	"fmt"
	"sort"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/pkg/work"
)

// ParentPhases are the columns of `oc get machineconfignodes` (the MachineConfigNode enhancement),
// in update order.
var ParentPhases = []string{
	string(mcfgv1.MachineConfigNodeUpdated),
	string(mcfgv1.MachineConfigNodeUpdatePrepared),
	string(mcfgv1.MachineConfigNodeUpdateExecuted),
	string(mcfgv1.MachineConfigNodeUpdatePostActionComplete),
	string(mcfgv1.MachineConfigNodeUpdateComplete),
	string(mcfgv1.MachineConfigNodeResumed),
}

func isParent(t string) bool {
	for _, p := range ParentPhases {
		if p == t {
			return true
		}
	}
	return false
}

// Tracker follows the MachineConfigNodes of one pool: it keeps the latest
// object per node and the ordered list of transitions seen.
type Tracker struct {
	nodes    map[string]*mcfgv1.MachineConfigNode
	seen     map[string]bool
	timeline []work.Event
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{nodes: map[string]*mcfgv1.MachineConfigNode{}, seen: map[string]bool{}}
}

// Observe records a new version of a node's MachineConfigNode and returns
// the condition transitions it brings; first is set when the node was not
// tracked yet (its conditions then describe where it stands, not changes).
func (t *Tracker) Observe(mcn *mcfgv1.MachineConfigNode) (evs []work.Event, first bool) {
	_, known := t.nodes[mcn.Name]
	t.nodes[mcn.Name] = mcn.DeepCopy()
	for _, c := range mcn.Status.Conditions {
		key := fmt.Sprintf("%s/%s/%s/%s/%s", mcn.Name, c.Type, c.Status, c.Reason, c.LastTransitionTime.UTC().Format(time.RFC3339Nano))
		if t.seen[key] {
			continue
		}
		t.seen[key] = true
		e := work.Event{Node: mcn.Name, Phase: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message, Time: c.LastTransitionTime.Time}
		t.timeline = append(t.timeline, e)
		evs = append(evs, e)
	}
	return evs, !known
}

// Timeline returns the transitions in the order they were observed.
// Condition times have one-second precision, too coarse to order a fast
// rollout; watch events arrive in the order the apiserver stored them.
func (t *Tracker) Timeline() []work.Event {
	return append([]work.Event(nil), t.timeline...)
}

// Nodes returns the tracked MachineConfigNodes by name.
func (t *Tracker) Nodes() []*mcfgv1.MachineConfigNode {
	names := make([]string, 0, len(t.nodes))
	for n := range t.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*mcfgv1.MachineConfigNode, 0, len(names))
	for _, n := range names {
		out = append(out, t.nodes[n])
	}
	return out
}

func conditionStatus(mcn *mcfgv1.MachineConfigNode, t string) string {
	for _, c := range mcn.Status.Conditions {
		if c.Type == t {
			return string(c.Status)
		}
	}
	return "-"
}

// inProgress names the child phase currently Unknown, or a degraded
// condition, with its message.
func inProgress(mcn *mcfgv1.MachineConfigNode) string {
	for _, c := range mcn.Status.Conditions {
		if c.Type == string(mcfgv1.MachineConfigNodeNodeDegraded) && c.Status == metav1.ConditionTrue {
			return fmt.Sprintf("NodeDegraded: %s", c.Message)
		}
	}
	for _, c := range mcn.Status.Conditions {
		if !isParent(c.Type) && c.Status == metav1.ConditionUnknown {
			return fmt.Sprintf("%s: %s", c.Type, c.Message)
		}
	}
	return ""
}

// nodeDegraded returns the NodeDegraded condition of a node when it is True.
func nodeDegraded(mcn *mcfgv1.MachineConfigNode) (metav1.Condition, bool) {
	for _, c := range mcn.Status.Conditions {
		if c.Type == string(mcfgv1.MachineConfigNodeNodeDegraded) && c.Status == metav1.ConditionTrue {
			return c, true
		}
	}
	return metav1.Condition{}, false
}
