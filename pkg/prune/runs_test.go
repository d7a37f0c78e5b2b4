package prune

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/retention"
	"github.com/kiln-dev/kiln/test/env"
)

// TestRunsKeepTheImagesTheyReported: against a real apiserver with
// Tekton's CRDs, the prune reads kiln's runs itself. A node-image run
// still going keeps the image its image-build TaskRun reported, with the
// run named as the reason; a finished upgrade-ahead run, the newest for
// its pool and target, keeps its image; an older one for the same target
// does not, and once the live run finishes its image is no longer kept.
func TestRunsKeepTheImagesTheyReported(t *testing.T) {
	ctx := context.Background()
	e := env.Start(t, env.Options{Kube: true})
	c := e.Kube.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kiln"}}); err != nil {
		t.Fatal(err)
	}
	f := newFixtureAt(t, inProcessRegistry(t, false))
	live := f.node(t, f.nodeInputs(t, "1"), nil)
	aheadNew := f.node(t, f.nodeInputs(t, "2"), nil)
	aheadOld := f.node(t, f.nodeInputs(t, "3"), nil)

	ahead := map[string]string{retention.LabelPool: "worker", retention.LabelTrigger: retention.TriggerUpgradeAhead, retention.LabelTargetRelease: "4.17.1"}
	makeRun(t, c, "worker-live", nil, "", live)
	makeRun(t, c, "worker-ahead-1", ahead, corev1.ConditionTrue, aheadOld)
	makeRun(t, c, "worker-ahead-2", ahead, corev1.ConditionFalse, aheadNew)

	cfg := f.config(ReadCluster(c, "kiln"))
	p, err := MakePlan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		live:     "kept: PipelineRun kiln/worker-live, not finished: image-build's image",
		aheadNew: "kept: PipelineRun kiln/worker-ahead-2, the newest upgrade-ahead run of pool worker for 4.17.1: image-build's image",
		aheadOld: "kiln's image, needed by nothing in the keep set",
	}
	if d := cmp.Diff(want, reasons(p)); d != "" {
		t.Errorf("decisions (-want +got):\n%s", d)
	}

	finish(t, c, "worker-live", corev1.ConditionTrue)
	p, err = MakePlan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := reasons(p)[live]; got != "kiln's image, needed by nothing in the keep set" {
		t.Errorf("after its run finished, %s: %q, want it deleted", live, got)
	}
}

// reasons maps each decision's image to its reason.
func reasons(p *Plan) map[string]string {
	out := map[string]string{}
	for _, d := range p.Decisions {
		out[d.Repo+"@"+d.Digest] = d.Reason
	}
	return out
}

// makeRun plays the trigger's and Tekton's parts: a PipelineRun in
// namespace kiln (finished with done unless it is ""), and its
// image-build TaskRun reporting image (repo@digest).
func makeRun(t *testing.T, c client.Client, name string, labels map[string]string, done corev1.ConditionStatus, image string) {
	t.Helper()
	ctx := context.Background()
	pr := &pipelinev1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Namespace: "kiln", Name: name, Labels: labels},
		Spec: pipelinev1.PipelineRunSpec{PipelineRef: &pipelinev1.PipelineRef{Name: "kiln-node-image"}}}
	if err := c.Create(ctx, pr); err != nil {
		t.Fatal(err)
	}
	if done != "" {
		finish(t, c, name, done)
	}
	tr := &pipelinev1.TaskRun{ObjectMeta: metav1.ObjectMeta{Namespace: "kiln", Name: name + "-image-build",
		Labels: map[string]string{"tekton.dev/pipelineRun": name, "tekton.dev/pipelineTask": "image-build"}},
		Spec: pipelinev1.TaskRunSpec{TaskRef: &pipelinev1.TaskRef{Name: "kiln-image-build"}}}
	if err := c.Create(ctx, tr); err != nil {
		t.Fatal(err)
	}
	url, dig, _ := strings.Cut(image, "@")
	tr.Status.Results = []pipelinev1.TaskRunResult{
		{Name: "IMAGE_URL", Type: pipelinev1.ResultsTypeString, Value: *pipelinev1.NewStructuredValues(url)},
		{Name: "IMAGE_DIGEST", Type: pipelinev1.ResultsTypeString, Value: *pipelinev1.NewStructuredValues(dig)},
	}
	if err := c.Status().Update(ctx, tr); err != nil {
		t.Fatal(err)
	}
}

// finish marks a PipelineRun done: succeeded (True) or failed (False).
func finish(t *testing.T, c client.Client, name string, done corev1.ConditionStatus) {
	t.Helper()
	ctx := context.Background()
	var pr pipelinev1.PipelineRun
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kiln", Name: name}, &pr); err != nil {
		t.Fatal(err)
	}
	pr.Status.Status = duckv1.Status{Conditions: duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: done}}}
	if err := c.Status().Update(ctx, &pr); err != nil {
		t.Fatal(err)
	}
}
