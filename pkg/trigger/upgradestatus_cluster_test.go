package trigger

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/work"
)

// statusData is ConfigMap kiln-upgrade-status's data (nil when absent).
func (h *harness) statusData() map[string]string {
	var cm corev1.ConfigMap
	if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: UpgradeStatusConfigMap}, &cm); err != nil {
		return nil
	}
	return cm.Data
}

// TestUpgradeStatusConfigMapFollowsReadiness: kiln-upgrade-status has one
// line per pool and target, Running while the runs are, then Ready, or
// NotReady with the failed stage and its cause escaped; another pool's
// line stays, and the lines of releases no longer offered go.
func TestUpgradeStatusConfigMapFollowsReadiness(t *testing.T) {
	h := newHarness(t)
	h.offerUpdates(h.offered("4.18.3"), h.offered("4.19.0"))
	h.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: UpgradeStatusConfigMap, Namespace: ns, Labels: map[string]string{LabelManagedBy: ManagedBy}},
		Data: map[string]string{"gone_4.18.3": "Ready: an earlier pool's line"}})
	h.create(pool("worker", true), machineConfig("50-worker", "worker", "x=1"))
	h.start(200 * time.Millisecond)
	eventually(t, wait, "two Running lines", func() bool {
		d := h.statusData()
		return strings.HasPrefix(d["worker_4.18.3"], "Running: PipelineRun kiln-worker-ahead-4.18.3-") &&
			strings.HasPrefix(d["worker_4.19.0"], "Running: PipelineRun kiln-worker-ahead-4.19.0-")
	})
	var failed string
	for _, r := range h.aheadOf("worker") {
		if r.Labels[LabelTargetRelease] == "4.18.3" {
			h.finish(r.Name, corev1.ConditionTrue, nil)
		} else {
			failed = r.Name
			h.finish(r.Name, corev1.ConditionFalse, map[string]string{work.ResultFailedStage: "kmod-build", work.ResultFailure: "foo.c:9: error\x1b]0;owned\x07"})
		}
	}
	want := map[string]string{
		"gone_4.18.3":   "Ready: an earlier pool's line",
		"worker_4.18.3": "Ready: PipelineRun " + h.aheadOf("worker")[0].Name + " built, signed and verified the node image",
		"worker_4.19.0": `NotReady: kmod-build: foo.c:9: error\x1b]0;owned\a (PipelineRun ` + failed + ")",
	}
	if h.aheadOf("worker")[0].Name == failed {
		want["worker_4.18.3"] = "Ready: PipelineRun " + h.aheadOf("worker")[1].Name + " built, signed and verified the node image"
	}
	eventually(t, wait, "Ready and NotReady lines", func() bool { return cmp.Equal(want, h.statusData()) })

	h.offerUpdates()
	eventually(t, wait, "the worker's lines removed", func() bool {
		return cmp.Equal(map[string]string{"gone_4.18.3": "Ready: an earlier pool's line"}, h.statusData())
	})
}
