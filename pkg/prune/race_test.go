package prune

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

	read := ReadCluster(e.Kube.Client)
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
