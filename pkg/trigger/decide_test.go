package trigger

import (
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
)

const (
	fpA = "aaaaaaaaaa000000000000000000000a"
	fpB = "bbbbbbbbbb000000000000000000000b"
	fpC = "cccccccccc000000000000000000000c"
)

// run makes a PipelineRun of pool "w" in one of the states the trigger
// tells apart; age orders runs (higher is older).
func run(fp, state string, age int) *pipelinev1.PipelineRun {
	pr := &pipelinev1.PipelineRun{ObjectMeta: metav1.ObjectMeta{
		Name:              RunName("w", TriggerMachineConfig, fp),
		Labels:            map[string]string{LabelFingerprint: fp},
		CreationTimestamp: metav1.NewTime(time.Unix(1_000_000-int64(age), 0)),
	}}
	done := func(s corev1.ConditionStatus) {
		pr.Status.Status = duckv1.Status{Conditions: duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: s}}}
	}
	switch state {
	case "pending":
		pr.Spec.Status = pipelinev1.PipelineRunSpecStatusPending
	case "active":
		pr.Status.ChildReferences = []pipelinev1.ChildStatusReference{{PipelineTaskName: "image-build"}}
	case "rollout":
		pr.Status.ChildReferences = []pipelinev1.ChildStatusReference{{PipelineTaskName: "image-build"}, {PipelineTaskName: "rollout"}}
	case "superseded":
		pr.Spec.Status = pipelinev1.PipelineRunSpecStatusCancelledRunFinally
		pr.Annotations = map[string]string{AnnotSupersededBy: fpB}
	case "cancelling":
		pr.Spec.Status = pipelinev1.PipelineRunSpecStatusCancelledRunFinally
	case "succeeded":
		done(corev1.ConditionTrue)
	case "succeeded-rolled":
		done(corev1.ConditionTrue)
		pr.Status.ChildReferences = []pipelinev1.ChildStatusReference{{PipelineTaskName: "rollout"}}
	case "failed":
		done(corev1.ConditionFalse)
	}
	return pr
}

func TestDecide(t *testing.T) {
	type want struct {
		create, pending bool
		start, recreate string
		cancel          []string // name:status
	}
	for _, tc := range []struct {
		name string
		runs []*pipelinev1.PipelineRun
		want want
	}{
		{"first run", nil, want{create: true}},
		{"same fingerprint exists: nothing", []*pipelinev1.PipelineRun{run(fpA, "succeeded", 1)}, want{}},
		{"same fingerprint running: nothing", []*pipelinev1.PipelineRun{run(fpA, "active", 1)}, want{}},
		{"same fingerprint failed: nothing (a rebuild is asked with kiln.dev/rebuild)", []*pipelinev1.PipelineRun{run(fpA, "failed", 1)}, want{}},
		{"new fingerprint, old done", []*pipelinev1.PipelineRun{run(fpB, "succeeded", 1)}, want{create: true}},
		{"new fingerprint cancels a run before rollout", []*pipelinev1.PipelineRun{run(fpB, "active", 1)},
			want{create: true, cancel: []string{RunName("w", TriggerMachineConfig, fpB) + ":CancelledRunFinally"}}},
		{"new fingerprint waits behind a rollout", []*pipelinev1.PipelineRun{run(fpB, "rollout", 1)},
			want{create: true, pending: true}},
		{"a newer fingerprint replaces the queued one", []*pipelinev1.PipelineRun{run(fpC, "pending", 1), run(fpB, "rollout", 2)},
			want{create: true, pending: true, cancel: []string{RunName("w", TriggerMachineConfig, fpC) + ":Cancelled"}}},
		{"queued run starts when the rollout ended", []*pipelinev1.PipelineRun{run(fpA, "pending", 1), run(fpB, "succeeded-rolled", 2)},
			want{start: RunName("w", TriggerMachineConfig, fpA)}},
		{"queued run keeps waiting", []*pipelinev1.PipelineRun{run(fpA, "pending", 1), run(fpB, "rollout", 2)}, want{}},
		{"a cancelling run does not block", []*pipelinev1.PipelineRun{run(fpB, "cancelling", 1)}, want{create: true}},
		{"undo after the edit rolled out runs the old fingerprint again",
			[]*pipelinev1.PipelineRun{run(fpB, "succeeded-rolled", 1), run(fpA, "succeeded-rolled", 2)},
			want{create: true, recreate: RunName("w", TriggerMachineConfig, fpA)}},
		{"undo of an edit whose run the trigger cancelled runs it again",
			[]*pipelinev1.PipelineRun{run(fpB, "active", 1), run(fpA, "superseded", 2)},
			want{create: true, recreate: RunName("w", TriggerMachineConfig, fpA), cancel: []string{RunName("w", TriggerMachineConfig, fpB) + ":CancelledRunFinally"}}},
		{"a run a user cancelled is not retried",
			[]*pipelinev1.PipelineRun{run(fpA, "cancelling", 1)}, want{}},
		{"undo of an edit that never rolled out is nothing",
			[]*pipelinev1.PipelineRun{run(fpB, "failed", 1), run(fpA, "succeeded-rolled", 2)}, want{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newestFirst(tc.runs)
			p := decide(tc.runs, fpA)
			got := want{create: p.create, pending: p.pending}
			if p.start != nil {
				got.start = p.start.Name
			}
			if p.recreate != nil {
				got.recreate = p.recreate.Name
			}
			for r, st := range p.cancel {
				got.cancel = append(got.cancel, r.Name+":"+string(st))
			}
			sort.Strings(got.cancel)
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); d != "" {
				t.Fatalf("decide (-want +got):\n%s", d)
			}
		})
	}
}

func TestSettler(t *testing.T) {
	now := time.Unix(0, 0)
	s := newSettler(2*time.Second, 5*time.Second, func() time.Time { return now })
	if w := s.wait("p"); w != 0 {
		t.Fatalf("untouched key waits %v", w)
	}
	s.touch("p")
	now = now.Add(time.Second)
	if w := s.wait("p"); w != time.Second {
		t.Fatalf("wait one second into the quiet time = %v, want 1s", w)
	}
	// A steady stream of edits, one per second: the cap ends the burst.
	for i := 0; i < 3; i++ {
		s.touch("p")
		now = now.Add(time.Second)
	}
	if w := s.wait("p"); w != time.Second {
		t.Fatalf("wait at 4s of a burst = %v, want 1s (cap at 5s)", w)
	}
	now = now.Add(time.Second)
	if w := s.wait("p"); w != 0 {
		t.Fatalf("wait at the cap = %v, want 0", w)
	}
	if w := s.wait("p"); w != 0 {
		t.Fatalf("a finished burst must not wait again, got %v", w)
	}
	// The boot image stream's key waits out its own, longer quiet time.
	s.touch("b")
	now = now.Add(3 * time.Second)
	if w := s.waitQuiet("b", 5*time.Second); w != 2*time.Second {
		t.Fatalf("waitQuiet 3s into a 5s quiet time = %v, want 2s", w)
	}
	if w := s.wait("b"); w != 0 {
		t.Fatalf("the same key under the 2s quiet time = %v, want 0", w)
	}
}
