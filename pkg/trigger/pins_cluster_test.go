package trigger

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/install"
)

// startAsTrigger runs the trigger as the kiln-trigger ServiceAccount with
// exactly the RBAC config/ installs, through a proxy that records every
// request; the returned check fails the test on any request the
// apiserver refused.
func (h *harness) startAsTrigger(t *testing.T) (check func()) {
	t.Helper()
	objs, err := install.Render(install.ConfigDir())
	if err != nil {
		t.Fatal(err)
	}
	// The namespaces of the bootimages and registries Roles.
	h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-machine-api"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OpenShiftConfigNamespace}})
	rbac := install.Select(objs, "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
	if err := install.Apply(context.Background(), h.c, rbac); err != nil {
		t.Fatal(err)
	}
	proxy := install.StartProxy(t, h.kube.Config, "system:serviceaccount:kiln:kiln-trigger")
	mgr, err := NewManager(proxy.Config(), Options{Namespace: ns, MetricsAddr: "0", ProbeAddr: "0",
		Settle: 200 * time.Millisecond, MaxSettle: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return func() {
		t.Helper()
		if f := install.Forbidden(proxy.Requests()); len(f) > 0 {
			t.Errorf("requests the apiserver refused kiln-trigger:\n%v", f)
		}
	}
}

// kilnPins are the PinnedImageSets kiln made for pool, by release → image.
func (h *harness) kilnPins(pool string) map[string]string {
	var l mcfgv1.PinnedImageSetList
	if err := h.c.List(context.Background(), &l, client.MatchingLabels{LabelManagedBy: ManagedBy, LabelPool: pool}); err != nil {
		h.t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range l.Items {
		for _, i := range s.Spec.PinnedImages {
			out[s.Labels[LabelTargetRelease]] = string(i.Name)
		}
	}
	return out
}

// poolPins are the names in pool's spec.pinnedImageSets, in order.
func (h *harness) poolPins(pool string) []string {
	var p mcfgv1.MachineConfigPool
	if err := h.c.Get(context.Background(), client.ObjectKey{Name: pool}, &p); err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, r := range p.Spec.PinnedImageSets {
		out = append(out, r.Name)
	}
	return out
}

// TestUpgradeAheadStagesReadyImagesAsPinnedImageSets runs the trigger as
// its ServiceAccount (config/'s RBAC, nothing refused): the ready run's
// node image gets a kiln-labelled PinnedImageSet, listed in the pool after
// the user's own entry, and the failed run's release none; when the
// release is no longer offered, set and entry go and the user's set and
// entry stay; offered again it is staged again, and once the cluster moves
// to it the set stays until the pool has rolled its image out.
func TestUpgradeAheadStagesReadyImagesAsPinnedImageSets(t *testing.T) {
	h := newHarness(t)
	h.offerUpdates(h.offered("4.18.3"), h.offered("4.19.0"))
	userSet := &mcfgv1.PinnedImageSet{ObjectMeta: metav1.ObjectMeta{Name: "user-set"},
		Spec: mcfgv1.PinnedImageSetSpec{PinnedImages: []mcfgv1.PinnedImageRef{{Name: mcfgv1.ImageDigestFormat("quay.io/user/tools@sha256:" + strings.Repeat("c", 64))}}}}
	worker := pool("worker", true)
	worker.Spec.PinnedImageSets = []mcfgv1.PinnedImageSetRef{{Name: userSet.Name}}
	h.create(userSet, worker, machineConfig("50-worker", "worker", "x=1"))
	check := h.startAsTrigger(t)

	eventually(t, wait, "two upgrade-ahead runs", func() bool { return len(h.aheadOf("worker")) == 2 })
	image := "registry.example/os-worker@sha256:" + strings.Repeat("d", 64)
	for _, r := range h.aheadOf("worker") {
		if r.Labels[LabelTargetRelease] == "4.18.3" {
			h.finish(r.Name, corev1.ConditionTrue, map[string]string{resultImageURL: "registry.example/os-worker", resultImageDigest: "sha256:" + strings.Repeat("d", 64)})
		} else {
			h.finish(r.Name, corev1.ConditionFalse, map[string]string{work.ResultFailedStage: "kmod-build", work.ResultFailure: "module foo does not build"})
		}
	}
	staged := pinName("worker", "4.18.3", image)
	eventually(t, wait, "the ready image staged", func() bool { return slices.Equal(h.poolPins("worker"), []string{userSet.Name, staged}) })
	if d := cmp.Diff(map[string]string{"4.18.3": image}, h.kilnPins("worker")); d != "" {
		t.Errorf("kiln's PinnedImageSets (-want +got):\n%s", d)
	}
	if msg, ok := h.event("worker", ReasonPinned); !ok || !strings.Contains(msg, image) {
		t.Errorf("pool event %s %q, want it to name %s", ReasonPinned, msg, image)
	}

	h.offerUpdates(h.offered("4.19.0"))
	eventually(t, wait, "the set of a release no longer offered removed", func() bool {
		return len(h.kilnPins("worker")) == 0 && slices.Equal(h.poolPins("worker"), []string{userSet.Name})
	})
	if err := h.c.Get(context.Background(), client.ObjectKey{Name: userSet.Name}, &mcfgv1.PinnedImageSet{}); err != nil {
		t.Errorf("the user's PinnedImageSet: %v", err)
	}

	h.offerUpdates(h.offered("4.18.3"), h.offered("4.19.0"))
	eventually(t, wait, "staged again", func() bool { return len(h.kilnPins("worker")) == 1 })
	// The cluster moves to 4.18.3: no longer a target, but the pool has
	// not rolled it out.
	h.desire(h.offered("4.18.3"), h.offered("4.19.0"))
	// The trigger reconciles within MaxSettle (2s) of the change.
	consistently(t, 4*time.Second, "the set removed before the pool rolled it out", func() bool { return len(h.kilnPins("worker")) == 0 })
	// The pool's run rolled it out: kiln's MachineConfig names the image
	// and every machine runs the pool's configuration.
	var p mcfgv1.MachineConfigPool
	if err := h.c.Get(context.Background(), client.ObjectKey{Name: "worker"}, &p); err != nil {
		t.Fatal(err)
	}
	p.Status = mcfgv1.MachineConfigPoolStatus{MachineCount: 2, UpdatedMachineCount: 2, ReadyMachineCount: 2}
	if err := h.c.Status().Update(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
	mc := machineConfig(rollout.MachineConfigName("worker"), "worker", "")
	mc.Labels[rollout.ManagedLabel] = "true"
	mc.Spec.KernelArguments, mc.Spec.OSImageURL = nil, image
	h.create(mc)
	eventually(t, wait, "the rolled-out set removed", func() bool {
		return len(h.kilnPins("worker")) == 0 && slices.Equal(h.poolPins("worker"), []string{userSet.Name})
	})
	check()
}

// desire sets the ClusterVersion moving to release (status.desired) with
// these updates offered.
func (h *harness) desire(release configv1.Release, updates ...configv1.Release) {
	h.t.Helper()
	var cv configv1.ClusterVersion
	if err := h.c.Get(context.Background(), client.ObjectKey{Name: "version"}, &cv); err != nil {
		h.t.Fatal(err)
	}
	cv.Status.Desired = release
	cv.Status.AvailableUpdates = updates
	if err := h.c.Status().Update(context.Background(), &cv); err != nil {
		h.t.Fatalf("setting ClusterVersion status.desired: %v", err)
	}
}
