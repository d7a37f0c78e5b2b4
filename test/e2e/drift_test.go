package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/pkg/trigger"
	"github.com/kiln-dev/kiln/test/mcosim"
)

// driftPool runs the drift scenario; master has no kernel arguments of its
// own, so switching the quirk on does not re-render its current config.
const driftPool = "master"

// testDriftGate is issue 22's scenario on real Tekton, on the running
// cluster: mcosim renders the master pool with a quirk (kernel arguments
// sorted), a new MachineConfig with unsorted kernel arguments makes a run,
// and its rollout stops with DriftDetected before any node takes the new
// image; the pool stays on the image it had, kiln's MachineConfig names it
// again, the trigger counts the drift. Then the quirk goes and a rebuild
// rolls out through the gate.
func (c *cluster) testDriftGate(ctx context.Context, t *testing.T) {
	prevT := c.t
	c.t = t
	defer func() { c.t = prevT }()

	kilnMC := &mcfgv1.MachineConfig{}
	if err := c.c.Get(ctx, client.ObjectKey{Name: rollout.MachineConfigName(driftPool)}, kilnMC); err != nil {
		t.Fatal(err)
	}
	before := kilnMC.Spec.OSImageURL
	beforeDigest := before[strings.LastIndex(before, "@")+1:]
	known := c.runNames(ctx)
	c.patchPool(ctx, driftPool, func(p *mcfgv1.MachineConfigPool) {
		p.Annotations[mcosim.RenderQuirkAnnotation] = mcosim.QuirkSortKernelArguments
	})
	role := map[string]string{mcrender.RoleLabel: driftPool}
	c.noteChange("MachineConfig 60-master-kiln-drift added", driftPool)
	c.create(ctx, &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "60-master-kiln-drift", Labels: role},
		Spec: mcfgv1.MachineConfigSpec{KernelArguments: []string{"quiet", "audit=1"},
			Config: runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)}}})

	r := c.waitRun(ctx, driftPool, func(r *pipelinev1.PipelineRun) bool { return !known[r.Name] }, 10*time.Minute)
	r = c.waitFinished(ctx, r, 15*time.Minute)
	results := map[string]string{}
	for _, res := range r.Status.Results {
		results[res.Name] = res.Value.StringVal
	}
	if r.Status.GetCondition("Succeeded").IsTrue() || results["ROLLOUT_STATE"] != rollout.StateDriftDetected ||
		results["DRIFT_GATE"] != rollout.GateDrift || !strings.HasPrefix(results["PREDICTED_RENDERED_NAME"], "rendered-"+driftPool+"-") {
		t.Fatalf("run %s: succeeded %v, results %v; want a failed run with ROLLOUT_STATE=DriftDetected\n%s",
			r.Name, r.Status.GetCondition("Succeeded").IsTrue(), results, c.failedTasks(ctx, r))
	}
	// The run says where and why it failed, and what changed, without
	// opening a TaskRun: the pipeline results and the changes param.
	if results["FAILED_STAGE"] != "rollout" || !strings.Contains(results["FAILURE"], "drift") {
		t.Errorf("run %s: FAILED_STAGE %q FAILURE %q, want rollout and the drift", r.Name, results["FAILED_STAGE"], results["FAILURE"])
	}
	if got := param(r, "changes"); got != "MachineConfig added 60-master-kiln-drift" {
		t.Errorf("run %s: changes %q", r.Name, got)
	}
	// No node took the new image; kiln's MachineConfig names the old one.
	if err := c.c.Get(ctx, client.ObjectKey{Name: rollout.MachineConfigName(driftPool)}, kilnMC); err != nil || kilnMC.Spec.OSImageURL != before {
		t.Errorf("kiln's MachineConfig after the drift: %v, osImageURL %q, want %s back", err, kilnMC.Spec.OSImageURL, before)
	}
	pool := &mcfgv1.MachineConfigPool{}
	c.poll(ctx, 2*time.Minute, "pool "+driftPool+" to settle on its previous image", func() bool {
		if err := c.c.Get(ctx, client.ObjectKey{Name: driftPool}, pool); err != nil {
			t.Fatal(err)
		}
		return pool.Status.Configuration.Name == pool.Spec.Configuration.Name && pool.Status.UpdatedMachineCount == pool.Status.MachineCount
	})
	if pool.Spec.Paused || pool.Annotations[rollout.GatePausedAnnot] != "" {
		t.Errorf("pool %s: paused %v, annotations %v; want it let go", driftPool, pool.Spec.Paused, pool.Annotations)
	}
	if pool.Spec.Configuration.Name == results["PREDICTED_RENDERED_NAME"] {
		t.Errorf("pool %s is on kiln's predicted config %s", driftPool, pool.Spec.Configuration.Name)
	}
	c.assertPoolUpdated(ctx, driftPool, beforeDigest)
	c.assertDriftEvent(ctx, driftPool)
	c.poll(ctx, 2*time.Minute, "the trigger to count the drift of "+r.Name, func() bool {
		cur := &pipelinev1.PipelineRun{}
		if err := c.c.Get(ctx, client.ObjectKeyFromObject(r), cur); err != nil {
			t.Fatal(err)
		}
		return cur.Annotations[trigger.AnnotDriftCounted] == "true"
	})

	// Without the quirk, a rebuild of the same inputs passes the gate.
	known = c.runNames(ctx)
	c.patchPool(ctx, driftPool, func(p *mcfgv1.MachineConfigPool) {
		delete(p.Annotations, mcosim.RenderQuirkAnnotation)
		p.Annotations[trigger.AnnotRebuild] = "after-drift"
	})
	next := c.waitRun(ctx, driftPool, func(r *pipelinev1.PipelineRun) bool { return !known[r.Name] }, 10*time.Minute)
	next = c.waitDone(ctx, next, 15*time.Minute)
	c.assertRun(ctx, next)
	for _, res := range next.Status.Results {
		if res.Name == "DRIFT_GATE" && res.Value.StringVal != rollout.GatePassed {
			t.Errorf("run %s: DRIFT_GATE %s, want Passed", next.Name, res.Value.StringVal)
		}
	}
}

// waitFinished waits for r to finish, whatever its outcome.
func (c *cluster) waitFinished(ctx context.Context, r *pipelinev1.PipelineRun, timeout time.Duration) *pipelinev1.PipelineRun {
	c.t.Helper()
	cur := &pipelinev1.PipelineRun{}
	c.poll(ctx, timeout, "PipelineRun "+r.Name+" to finish", func() bool {
		if err := c.c.Get(ctx, client.ObjectKeyFromObject(r), cur); err != nil {
			c.t.Fatal(err)
		}
		return cur.IsDone()
	})
	return cur
}

func (c *cluster) patchPool(ctx context.Context, name string, edit func(*mcfgv1.MachineConfigPool)) {
	c.t.Helper()
	p := &mcfgv1.MachineConfigPool{}
	if err := c.c.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
		c.t.Fatal(err)
	}
	base := p.DeepCopy()
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	edit(p)
	if err := c.c.Patch(ctx, p, client.MergeFrom(base)); err != nil {
		c.t.Fatal(err)
	}
}

// assertDriftEvent: the rollout recorded a DriftDetected Warning on the pool.
func (c *cluster) assertDriftEvent(ctx context.Context, pool string) {
	c.t.Helper()
	evs := &corev1.EventList{}
	if err := c.c.List(ctx, evs, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		c.t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "MachineConfigPool" && e.InvolvedObject.Name == pool && e.Reason == rollout.EventReasonDrift && e.Type == corev1.EventTypeWarning {
			return
		}
	}
	c.t.Errorf("no %s event on pool %s", rollout.EventReasonDrift, pool)
}
