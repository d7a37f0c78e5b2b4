package moduleday0_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/moduleday0"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

const (
	ns        = "kiln-kmm"
	oldOS     = "Red Hat Enterprise Linux CoreOS 413.92.202310010000-0 (Plow)"
	newOS     = "Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)"
	roleLabel = "machineconfiguration.openshift.io/role"
)

// TestSync runs the ModuleDay0 sync in a controller-runtime manager against
// the real apiserver and registry, through the KMM day-0 proposal's scenarios in order.
func TestSync(t *testing.T) {
	e := env.Start(t, env.Options{Kube: true, Registry: true})
	c := e.Kube.Client
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	mgr, err := ctrl.NewManager(e.Kube.Config, ctrl.Options{Scheme: e.Kube.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	s := &moduleday0.Sync{Client: mgr.GetClient(), Namespace: ns, Recorder: mgr.GetEventRecorderFor("kiln-kmm-day0"),
		Exists: moduleday0.RemoteExists(registry.Remote{Insecure: []string{e.Registry.Host}}), Recheck: 100 * time.Millisecond}
	if err := s.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	mustCreate(t, c,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		pool("worker"), pool("infra"),
		node("w1", "worker", oldOS), node("w2", "worker", oldOS), node("i1", "infra", oldOS),
	)
	dayZero := e.Registry.Ref("day0/rhcos:413")
	mc := &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "99-worker-day0-image", Labels: map[string]string{roleLabel: "worker", moduleday0.KMMManagedLabel: "true"}},
		Spec:       mcfgv1.MachineConfigSpec{OSImageURL: dayZero, Config: runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)}},
	}
	mustCreate(t, c, mc)

	md := &kmmv1beta1.ModuleDay0{}
	key := client.ObjectKey{Namespace: ns, Name: mc.Name}
	t.Run("a kmm-managed MachineConfig gets a ModuleDay0", func(t *testing.T) {
		eventually(t, "ModuleDay0 synced", func() bool {
			return c.Get(ctx, key, md) == nil && meta.IsStatusConditionTrue(md.Status.Conditions, kmmv1beta1.ConditionSynced)
		})
		if md.Spec.OSMapping.ContainerImage != dayZero {
			t.Errorf("containerImage %q, want the MC's osImageURL %q", md.Spec.OSMapping.ContainerImage, dayZero)
		}
		if want := map[string]string{"node-role.kubernetes.io/worker": ""}; len(md.Spec.MachineConfigPoolSelector) != 1 || md.Spec.MachineConfigPoolSelector["node-role.kubernetes.io/worker"] != "" {
			t.Errorf("machineConfigPoolSelector %v, want %v", md.Spec.MachineConfigPoolSelector, want)
		}
	})

	t.Run("two ModuleDay0s on one pool are refused", func(t *testing.T) {
		other := &kmmv1beta1.ModuleDay0{
			ObjectMeta: metav1.ObjectMeta{Name: "a-second-one", Namespace: ns},
			Spec: kmmv1beta1.ModuleDay0Spec{
				OSMapping:                 kmmv1beta1.OSMapping{ContainerImage: "quay.io/x/y:1"},
				MachineConfigPoolSelector: map[string]string{"node-role.kubernetes.io/worker": ""},
			},
		}
		mustCreate(t, c, other)
		want := "ModuleDay0s 99-worker-day0-image, a-second-one all select MachineConfigPool worker; the KMM day-0 proposal allows one per pool: remove all but one"
		for _, k := range []client.ObjectKey{key, client.ObjectKeyFromObject(other)} {
			eventually(t, "conflict on "+k.Name, func() bool {
				got := &kmmv1beta1.ModuleDay0{}
				if c.Get(ctx, k, got) != nil {
					return false
				}
				cond := meta.FindStatusCondition(got.Status.Conditions, kmmv1beta1.ConditionSynced)
				return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == moduleday0.ReasonConflict && cond.Message == want
			})
			eventually(t, "warning event on "+k.Name, func() bool { return hasEvent(ctx, c, k.Name, moduleday0.ReasonConflict) })
		}
		if err := c.Delete(ctx, other); err != nil {
			t.Fatal(err)
		}
		eventually(t, "conflict cleared", func() bool {
			return c.Get(ctx, key, md) == nil && meta.IsStatusConditionTrue(md.Status.Conditions, kmmv1beta1.ConditionSynced)
		})
	})

	kmodImage := e.Registry.Ref("day0/rhcos-kmods:414")
	t.Run("the image is applied only once it exists", func(t *testing.T) {
		base := md.DeepCopy()
		md.Spec.OSMapping.Literal = newOS
		md.Spec.OSMapping.ContainerImage = kmodImage
		if err := c.Patch(ctx, md, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
		eventually(t, "ImageNotFound", func() bool {
			return conditionReason(ctx, c, key, kmmv1beta1.ConditionApplied) == moduleday0.ReasonImageAbsent
		})
		got := &mcfgv1.MachineConfig{}
		if err := c.Get(ctx, client.ObjectKey{Name: mc.Name}, got); err != nil || got.Spec.OSImageURL != dayZero {
			t.Fatalf("MachineConfig changed before the image existed: %q %v", got.Spec.OSImageURL, err)
		}
		img, _ := random.Image(512, 1)
		ref, _ := name.ParseReference(kmodImage, name.Insecure)
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		eventually(t, "osImageURL set", func() bool {
			return c.Get(ctx, client.ObjectKey{Name: mc.Name}, got) == nil && got.Spec.OSImageURL == kmodImage
		})
	})

	t.Run("nodes on the literal OS mark it applied", func(t *testing.T) {
		for _, n := range []string{"w1", "w2"} {
			nd := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKey{Name: n}, nd); err != nil {
				t.Fatal(err)
			}
			nd.Status.NodeInfo.OSImage = newOS
			if err := c.Status().Update(ctx, nd); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, "Applied", func() bool {
			return c.Get(ctx, key, md) == nil && meta.IsStatusConditionTrue(md.Status.Conditions, kmmv1beta1.ConditionApplied)
		})
		if c := meta.FindStatusCondition(md.Status.Conditions, kmmv1beta1.ConditionApplied); c.Message != `2 of 2 nodes run "`+newOS+`"` {
			t.Errorf("Applied message %q", c.Message)
		}
	})

	t.Run("removing the label deletes the ModuleDay0", func(t *testing.T) {
		got := &mcfgv1.MachineConfig{}
		if err := c.Get(ctx, client.ObjectKey{Name: mc.Name}, got); err != nil {
			t.Fatal(err)
		}
		base := got.DeepCopy()
		delete(got.Labels, moduleday0.KMMManagedLabel)
		if err := c.Patch(ctx, got, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
		eventually(t, "ModuleDay0 deleted", func() bool { return apierrors.IsNotFound(c.Get(ctx, key, &kmmv1beta1.ModuleDay0{})) })
	})
}

func pool(role string) *mcfgv1.MachineConfigPool {
	return &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel: role}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + role: ""}},
		},
	}
}

func node(n, role, os string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"node-role.kubernetes.io/" + role: ""}},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OSImage: os}}}
}

func mustCreate(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		status := o.DeepCopyObject().(client.Object)
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
		if n, ok := status.(*corev1.Node); ok { // status is not set by Create
			o.(*corev1.Node).Status = n.Status
			if err := c.Status().Update(context.Background(), o); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func conditionReason(ctx context.Context, c client.Client, key client.ObjectKey, typ string) string {
	md := &kmmv1beta1.ModuleDay0{}
	if c.Get(ctx, key, md) != nil {
		return ""
	}
	if cond := meta.FindStatusCondition(md.Status.Conditions, typ); cond != nil {
		return cond.Reason
	}
	return ""
}

func hasEvent(ctx context.Context, c client.Client, obj, reason string) bool {
	evs := &corev1.EventList{}
	if c.List(ctx, evs, client.InNamespace(ns)) != nil {
		return false
	}
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == obj && e.Reason == reason && e.Type == corev1.EventTypeWarning {
			return true
		}
	}
	return false
}
