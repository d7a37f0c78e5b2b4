package retention

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
)

// run is a PipelineRun in namespace kiln, created age before a fixed
// time; done says it finished (succeeded or failed alike).
func run(name string, age time.Duration, done bool, labels map[string]string) pipelinev1.PipelineRun {
	pr := pipelinev1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Namespace: "kiln", Name: name, Labels: labels,
		CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-age))}}
	st := corev1.ConditionUnknown
	if done {
		st = corev1.ConditionFalse
	}
	pr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: st}}
	return pr
}

// taskRun is pipelineRun's TaskRun of task, reporting results (name to
// value).
func taskRun(pipelineRun, task string, results map[string]string) pipelinev1.TaskRun {
	tr := pipelinev1.TaskRun{ObjectMeta: metav1.ObjectMeta{Namespace: "kiln", Name: pipelineRun + "-" + task,
		Labels: map[string]string{"tekton.dev/pipelineRun": pipelineRun, "tekton.dev/pipelineTask": task}}}
	for _, n := range sortedKeys(results) {
		tr.Status.Results = append(tr.Status.Results, pipelinev1.TaskRunResult{Name: n, Value: *pipelinev1.NewStructuredValues(results[n])})
	}
	return tr
}

func ahead(pool, target string) map[string]string {
	return map[string]string{LabelPool: pool, LabelTrigger: TriggerUpgradeAhead, LabelTargetRelease: target}
}

func TestRunImagesKeepsLiveRunsAndTheNewestUpgradeAheadRunPerPoolAndTarget(t *testing.T) {
	built := func(hex string) map[string]string {
		return map[string]string{"IMAGE_URL": repo, "IMAGE_DIGEST": "sha256:" + hex}
	}
	kmod := map[string]string{"KMOD_IMAGE_URL": "registry.example.com/kmods/x", "KMOD_IMAGE_DIGEST": "sha256:" + hexE}
	cases := []struct {
		name     string
		runs     []pipelinev1.PipelineRun
		taskRuns []pipelinev1.TaskRun
		want     []Named
	}{
		{
			name: "a run not finished keeps its node and kmod images; a finished one keeps nothing",
			runs: []pipelinev1.PipelineRun{run("worker-live", time.Hour, false, nil), run("worker-done", 2*time.Hour, true, nil)},
			taskRuns: []pipelinev1.TaskRun{
				taskRun("worker-live", "image-build", built(hexA)), taskRun("worker-live", "kmod-sign", kmod),
				taskRun("worker-live", "render", map[string]string{"RENDERED_NAME": "rendered-worker-1"}),
				taskRun("worker-done", "image-build", built(hexB)),
			},
			want: []Named{
				{img(hexA), "PipelineRun kiln/worker-live, not finished: image-build's image"},
				{"registry.example.com/kmods/x@sha256:" + hexE, "PipelineRun kiln/worker-live, not finished: kmod-sign's image"},
			},
		},
		{
			name: "of finished upgrade-ahead runs, the newest per pool and target keeps its image",
			runs: []pipelinev1.PipelineRun{
				run("worker-ahead-old", 3*time.Hour, true, ahead("worker", "4.17.1")),
				run("worker-ahead-new", time.Hour, true, ahead("worker", "4.17.1")),
				run("worker-ahead-other", 2*time.Hour, true, ahead("worker", "4.17.2")),
				run("infra-ahead", 4*time.Hour, true, ahead("infra", "4.17.1")),
			},
			taskRuns: []pipelinev1.TaskRun{
				taskRun("worker-ahead-old", "image-build", built(hexA)),
				taskRun("worker-ahead-new", "image-build", built(hexB)),
				taskRun("worker-ahead-other", "image-build", built(hexC)),
				taskRun("infra-ahead", "image-build", built(hexD)),
			},
			want: []Named{
				{img(hexD), "PipelineRun kiln/infra-ahead, the newest upgrade-ahead run of pool infra for 4.17.1: image-build's image"},
				{img(hexB), "PipelineRun kiln/worker-ahead-new, the newest upgrade-ahead run of pool worker for 4.17.1: image-build's image"},
				{img(hexC), "PipelineRun kiln/worker-ahead-other, the newest upgrade-ahead run of pool worker for 4.17.2: image-build's image"},
			},
		},
		{
			name: "within one second of creation the trigger's nanosecond annotation tells the newest",
			runs: []pipelinev1.PipelineRun{
				annotated(run("worker-ahead-b", time.Hour, true, ahead("worker", "4.17.1")), "2026-01-01T00:00:00.5Z"),
				annotated(run("worker-ahead-a", time.Hour, true, ahead("worker", "4.17.1")), "2026-01-01T00:00:00.7Z"),
			},
			taskRuns: []pipelinev1.TaskRun{
				taskRun("worker-ahead-b", "image-build", built(hexA)), taskRun("worker-ahead-a", "image-build", built(hexB)),
			},
			want: []Named{
				{img(hexB), "PipelineRun kiln/worker-ahead-a, the newest upgrade-ahead run of pool worker for 4.17.1: image-build's image"},
			},
		},
		{
			name:     "a digest without its repository, or a TaskRun of no run, names nothing",
			runs:     []pipelinev1.PipelineRun{run("worker-live", time.Hour, false, nil)},
			taskRuns: []pipelinev1.TaskRun{taskRun("worker-live", "image-build", map[string]string{"IMAGE_DIGEST": "sha256:" + hexA}), taskRun("", "x", built(hexB))},
			want:     nil,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if d := cmp.Diff(c.want, RunImages(c.runs, c.taskRuns)); d != "" {
				t.Errorf("RunImages (-want +got):\n%s", d)
			}
		})
	}
}

func annotated(pr pipelinev1.PipelineRun, created string) pipelinev1.PipelineRun {
	pr.Annotations = map[string]string{AnnotCreated: created}
	return pr
}

// TestReusePendingNamesRunsThatHaveNotFinishedImageBuild: a run not
// finished may still reuse an image without having reported it, until
// its image-build finishes; a queued run (no resolved Pipeline) may too;
// finished runs, runs past image-build and runs of a Pipeline without an
// image-build task (bootimages) may not.
func TestReusePendingNamesRunsThatHaveNotFinishedImageBuild(t *testing.T) {
	doneTask := func(pipelineRun, task string) pipelinev1.TaskRun {
		tr := taskRun(pipelineRun, task, nil)
		tr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue}}
		return tr
	}
	withTasks := func(pr pipelinev1.PipelineRun, tasks ...string) pipelinev1.PipelineRun {
		pr.Status.PipelineSpec = &pipelinev1.PipelineSpec{}
		for _, t := range tasks {
			pr.Status.PipelineSpec.Tasks = append(pr.Status.PipelineSpec.Tasks, pipelinev1.PipelineTask{Name: t})
		}
		return pr
	}
	runs := []pipelinev1.PipelineRun{
		run("queued", 0, false, nil),
		withTasks(run("building", 0, false, nil), "render", "image-build", "rollout"),
		withTasks(run("rolling-out", 0, false, nil), "render", "image-build", "rollout"),
		withTasks(run("finished", 0, true, nil), "render", "image-build", "rollout"),
		withTasks(run("bootimages", 0, false, nil), "bootimages"),
	}
	taskRuns := []pipelinev1.TaskRun{
		taskRun("building", "image-build", nil), // running: not done
		doneTask("building", "render"),
		doneTask("rolling-out", "image-build"),
	}
	want := []string{
		"PipelineRun kiln/building has not finished image-build and may yet reuse it",
		"PipelineRun kiln/queued has not finished image-build and may yet reuse it",
	}
	if d := cmp.Diff(want, ReusePending(runs, taskRuns)); d != "" {
		t.Errorf("ReusePending (-want +got):\n%s", d)
	}
}
