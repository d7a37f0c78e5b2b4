package trigger

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/work"
)

// TestStatusLinesSayReadyRunningOrNotReadyWithStageAndCause: one line per
// target, escaped and capped; a failed run names its stage and cause, a
// payload that cannot be read says so.
func TestStatusLinesSayReadyRunningOrNotReadyWithStageAndCause(t *testing.T) {
	run := func(name, sum string, done corev1.ConditionStatus, results map[string]string) *pipelinev1.PipelineRun {
		pr := &pipelinev1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelFingerprint: sum}}}
		if done != "" {
			pr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: done, Reason: "Failed", Message: "Tasks Completed: 6 (Failed: 1)"}}
		}
		for k, v := range results {
			pr.Status.Results = append(pr.Status.Results, pipelinev1.PipelineRunResult{Name: k, Value: *pipelinev1.NewStructuredValues(v)})
		}
		return pr
	}
	want := func(v, sum string, err error) aheadWant {
		return aheadWant{target: payload.Target{Version: v}, sum: sum, err: err}
	}
	runs := []*pipelinev1.PipelineRun{
		run("r1", "s1", corev1.ConditionTrue, nil),
		run("r2", "s2", corev1.ConditionFalse, map[string]string{work.ResultFailedStage: "kmod-build", work.ResultFailure: "hello.c:3: error\x1b[2J" + strings.Repeat("x", 2000)}),
		run("r3", "s3", "", nil),
	}
	got := statusLines("worker", runs, []aheadWant{
		want("4.18.3", "s1", nil), want("4.19.0", "s2", nil), want("4.19.1", "s3", nil),
		want("4.20.0", "s4", errors.New("release image: manifest unknown")), want("4.20.1", "s5", nil),
		want("4.21.0", "s6", errors.New(strings.Repeat("y", 3000))),
	})
	if long := got["worker_4.21.0"]; len(long) > maxStatusLine || !strings.HasPrefix(long, "NotReady: payload: ") || !strings.HasSuffix(long, "…") {
		t.Errorf("worker_4.21.0 = %.40q… (%d bytes), want it capped at %d", long, len(long), maxStatusLine)
	}
	delete(got, "worker_4.21.0")
	notReady := got["worker_4.19.0"]
	if !strings.HasPrefix(notReady, "NotReady: kmod-build: hello.c:3: error\\x1b[2J") || !strings.HasSuffix(notReady, "… (PipelineRun r2)") {
		t.Errorf("worker_4.19.0 = %.80q… (%d bytes), want NotReady with the stage, the escaped cause (capped) and the run", notReady, len(notReady))
	}
	delete(got, "worker_4.19.0")
	if d := cmp.Diff(map[string]string{
		"worker_4.18.3": "Ready: PipelineRun r1 built, signed and verified the node image",
		"worker_4.19.1": "Running: PipelineRun r3",
		"worker_4.20.0": "NotReady: payload: no upgrade-ahead run: release image: manifest unknown",
		"worker_4.20.1": "Running: creating its upgrade-ahead PipelineRun",
	}, got); d != "" {
		t.Errorf("statusLines (-want +got):\n%s", d)
	}
}

func TestWithPoolLinesReplacesOnlyThatPoolsLines(t *testing.T) {
	data := map[string]string{"a_4.1.0": "Ready", "a.b_4.1.0": "Running", "ab_4.1.0": "Ready"}
	got := withPoolLines(data, "a", map[string]string{"a_4.2.0": "Running"})
	if d := cmp.Diff(map[string]string{"a_4.2.0": "Running", "a.b_4.1.0": "Running", "ab_4.1.0": "Ready"}, got); d != "" {
		t.Errorf("withPoolLines (-want +got):\n%s", d)
	}
}
