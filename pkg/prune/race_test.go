package prune

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/retention"
	"github.com/kiln-dev/kiln/test/env"
)

// TestAnImageNeededAfterThePlanIsNotDeleted: the cluster is a real
// apiserver. Two images are planned for deletion; after the first is
// deleted, and before the second is, a rollout points kiln's
// MachineConfig at the second (the first image it named becoming the
// rollback target). The prune reads the cluster again before that
// delete, keeps the image, says why, and it still pulls and verifies.
func TestAnImageNeededAfterThePlanIsNotDeleted(t *testing.T) {
	ctx := context.Background()
	e := env.Start(t, env.Options{Kube: true, Registry: true})
	f := newFixture(t, e.Registry)
	current := f.node(t, f.nodeInputs(t, "1"), nil)
	a := f.node(t, f.nodeInputs(t, "2"), nil)
	b := f.node(t, f.nodeInputs(t, "3"), nil)
	first, second := slices.Min([]string{a, b}), slices.Max([]string{a, b})

	mc := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-kiln-worker-os-image",
		Labels: map[string]string{"machineconfiguration.openshift.io/role": "worker"}}}
	mc.Spec.Config = runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)}
	mc.Spec.OSImageURL = current
	if err := e.Kube.Client.Create(ctx, mc); err != nil {
		t.Fatal(err)
	}

	read := ReadCluster(e.Kube.Client, "")
	var calls atomic.Int32
	cluster := func(ctx context.Context) (retention.Cluster, error) {
		// Calls: the plan, the check before the first delete, the check
		// before the second: the rollout lands just before the last.
		if calls.Add(1) == 3 {
			rolloutTo(t, e.Kube.Client, second, current)
		}
		return read(ctx)
	}
	cfg := f.config(cluster)
	p, err := MakePlan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Deletes()) != 2 {
		t.Fatalf("planned %d deletes, want %s and %s", len(p.Deletes()), first, second)
	}
	out, err := Apply(ctx, cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	want := &Outcome{Deleted: []string{first}, Spared: map[string]string{second: "MachineConfig 99-kiln-worker-os-image: osImageURL"}}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("outcome (-want +got):\n%s", d)
	}
	f.gone(t, first)
	f.pullsAndVerifies(t, second, f.v)
	f.pullsAndVerifies(t, current, f.v)
}

// rolloutTo points kiln's MachineConfig at image with previous as the
// rollback target, as rollout does.
func rolloutTo(t *testing.T, c client.Client, image, previous string) {
	t.Helper()
	ctx := context.Background()
	mc := &mcfgv1.MachineConfig{}
	if err := c.Get(ctx, client.ObjectKey{Name: "99-kiln-worker-os-image"}, mc); err != nil {
		t.Error(err)
		return
	}
	mc.Spec.OSImageURL = image
	mc.Annotations = map[string]string{retention.PreviousImageAnnot: previous}
	if err := c.Update(ctx, mc); err != nil {
		t.Error(err)
	}
}

// TestNoImageIsDeletedWhileARunMayStillReuseIt: the cluster is a real
// apiserver with Tekton's CRDs. An old image is planned for deletion;
// before the delete, a run is queued whose image-build may prove that
// very image by its fingerprint (a revert to earlier inputs) and reuse it
// without reporting it yet. The prune keeps every image while such a run
// has not finished image-build, and says why; once the run's image-build
// reports the image, the next plan keeps it for that run.
func TestNoImageIsDeletedWhileARunMayStillReuseIt(t *testing.T) {
	ctx := context.Background()
	e := env.Start(t, env.Options{Kube: true, Registry: true})
	c := e.Kube.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kiln"}}); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, e.Registry)
	old := f.node(t, f.nodeInputs(t, "1"), nil)

	read := ReadCluster(c, "kiln")
	var calls atomic.Int32
	cluster := func(ctx context.Context) (retention.Cluster, error) {
		// Calls: the plan, then the check before the delete: the run is
		// queued just before it.
		if calls.Add(1) == 2 {
			pr := &pipelinev1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Namespace: "kiln", Name: "worker-revert"},
				Spec: pipelinev1.PipelineRunSpec{PipelineRef: &pipelinev1.PipelineRef{Name: "kiln-node-image"}}}
			if err := c.Create(ctx, pr); err != nil {
				t.Error(err)
			}
		}
		return read(ctx)
	}
	cfg := f.config(cluster)
	p, err := MakePlan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Deletes()) != 1 {
		t.Fatalf("planned %d deletes, want %s", len(p.Deletes()), old)
	}
	out, err := Apply(ctx, cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	want := &Outcome{Spared: map[string]string{old: "PipelineRun kiln/worker-revert has not finished image-build and may yet reuse it"}}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("outcome (-want +got):\n%s", d)
	}
	f.pullsAndVerifies(t, old, f.v)

	// The run's image-build proves the old image and reports it.
	tr := &pipelinev1.TaskRun{ObjectMeta: metav1.ObjectMeta{Namespace: "kiln", Name: "worker-revert-image-build",
		Labels: map[string]string{"tekton.dev/pipelineRun": "worker-revert", "tekton.dev/pipelineTask": "image-build"}},
		Spec: pipelinev1.TaskRunSpec{TaskRef: &pipelinev1.TaskRef{Name: "kiln-image-build"}}}
	if err := c.Create(ctx, tr); err != nil {
		t.Fatal(err)
	}
	url, dig, _ := strings.Cut(old, "@")
	tr.Status.Status = duckv1.Status{Conditions: duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue}}}
	tr.Status.Results = []pipelinev1.TaskRunResult{
		{Name: "IMAGE_URL", Type: pipelinev1.ResultsTypeString, Value: *pipelinev1.NewStructuredValues(url)},
		{Name: "IMAGE_DIGEST", Type: pipelinev1.ResultsTypeString, Value: *pipelinev1.NewStructuredValues(dig)},
	}
	if err := c.Status().Update(ctx, tr); err != nil {
		t.Fatal(err)
	}
	p, err = MakePlan(ctx, f.config(read))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reasons(p)[old], "kept: PipelineRun kiln/worker-revert, not finished: image-build's image"; got != want {
		t.Errorf("after the run reported it, %s: %q, want %q", old, got, want)
	}
}
