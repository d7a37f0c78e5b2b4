package rollout

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func benchNodes(n int) []*mcfgv1.MachineConfigNode {
	out := make([]*mcfgv1.MachineConfigNode, n)
	for i := range out {
		mcn := &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("worker-%04d", i)}}
		for j, p := range ParentPhases {
			mcn.Status.Conditions = append(mcn.Status.Conditions, metav1.Condition{
				Type: p, Status: metav1.ConditionFalse, Reason: "NotYetOccured", Message: "not yet",
				LastTransitionTime: metav1.NewTime(time.Unix(int64(i*10+j), 0)),
			})
		}
		out[i] = mcn
	}
	return out
}

// BenchmarkTrackerObserve500 observes one update of each of 500 nodes and
// prints the table once, as the rollout does per watch batch. The
// reference is decoding the same 500 objects from JSON, which the watch
// itself costs; the ratio says how much the progress view adds.
func BenchmarkTrackerObserve500(b *testing.B) {
	nodes := benchNodes(500)
	raw := make([][]byte, len(nodes))
	for i, n := range nodes {
		raw[i], _ = json.Marshal(n)
	}
	var ours, ref time.Duration
	for b.Loop() {
		start := time.Now()
		t := NewTracker()
		for _, n := range nodes {
			t.Observe(n)
		}
		newProgressLog(io.Discard).table(t, true)
		ours += time.Since(start)
		// The reference, interleaved so that both see the same load.
		b.StopTimer()
		start = time.Now()
		for _, r := range raw {
			var m mcfgv1.MachineConfigNode
			if err := json.Unmarshal(r, &m); err != nil {
				b.Fatal(err)
			}
		}
		ref += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(ref.Nanoseconds())/float64(b.N), "json-decode-ns/op")
	b.ReportMetric(float64(ours)/float64(ref), "ratio-vs-decode")
}
