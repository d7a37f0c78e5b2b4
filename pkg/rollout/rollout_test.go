package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/mcosim"
)

const payloadImage = "quay.io/openshift-release-dev/rhcos@sha256:0000000000000000000000000000000000000000000000000000000000000000"

func image(n int) string {
	return fmt.Sprintf("registry.test/kiln/worker@sha256:%064x", n)
}

// harness is one apiserver and one MCO stand-in shared by the subtests;
// each subtest uses its own pool and nodes.
type harness struct {
	t      testing.TB
	kube   *env.Kube
	admin  client.Client
	writes atomic.Int64 // non-read requests made by the rollout's client
	kiln   client.WithWatch
	sim    *mcosim.Sim
}

func newHarness(t testing.TB, stepDelay time.Duration) *harness {
	k := env.StartKube(t)
	h := &harness{t: t, kube: k, admin: k.Client}
	cfg := rest.CopyConfig(k.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodGet {
				h.writes.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: k.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	h.kiln = c
	var seen sync.Map
	sim, err := mcosim.Start(context.Background(), mcosim.Options{
		Client: k.Client, Renderer: mcosim.KilnRenderer{Defaults: mcrender.Defaults{OSImageURL: payloadImage}}, StepDelay: stepDelay,
		OnError: func(err error) {
			// Conflicts are the stand-in racing the rollout; they retry.
			if msg := err.Error(); !strings.Contains(msg, "the object has been modified") {
				if _, dup := seen.LoadOrStore(msg, true); !dup {
					t.Logf("mcosim: %v", err)
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Stop)
	h.sim = sim
	return h
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// pool creates a pool named name with n Ready nodes and its base MC, and
// waits until the stand-in reports it updated.
func (h *harness) pool(name string, n int) { h.poolWith(name, n, poolSpec{}) }

// poolSpec is what a test pool has beyond its base MC.
type poolSpec struct {
	annotations map[string]string
	paused      bool
	// kargs are the kernel arguments of a second MC, 50-<pool>-kargs.
	kargs []string
}

func (h *harness) poolWith(name string, n int, ps poolSpec) {
	t := h.t
	ctx := context.Background()
	role := map[string]string{rollout.RoleLabel: name}
	objs := []client.Object{
		// The MCs before the pool, so its first render has them all.
		&mcfgv1.MachineConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "00-" + name, Labels: role},
			Spec:       mcfgv1.MachineConfigSpec{OSImageURL: payloadImage, Config: runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)}},
		},
		&mcfgv1.MachineConfigPool{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ps.annotations},
			Spec: mcfgv1.MachineConfigPoolSpec{
				MachineConfigSelector: &metav1.LabelSelector{MatchLabels: role},
				NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}},
				Paused:                ps.paused,
			},
		},
	}
	if len(ps.kargs) > 0 { // before the pool, so the first render has it
		objs = append([]client.Object{&mcfgv1.MachineConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "50-" + name + "-kargs", Labels: role},
			Spec:       mcfgv1.MachineConfigSpec{KernelArguments: ps.kargs, Config: runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)}},
		}}, objs...)
	}
	for i := range n {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("%s-%d", name, i),
			Labels: map[string]string{"node-role.kubernetes.io/" + name: ""},
		}})
	}
	for _, o := range objs {
		if err := h.admin.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
		if node, ok := o.(*corev1.Node); ok {
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
			if err := h.admin.Status().Update(ctx, node); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.waitPool(name, func(p *mcfgv1.MachineConfigPool) bool {
		return p.Status.MachineCount == int32(n) && p.Status.UpdatedMachineCount == int32(n) && p.Status.Configuration.Name != "" &&
			p.Status.Configuration.Name == p.Spec.Configuration.Name
	})
}

func (h *harness) waitPool(name string, ok func(*mcfgv1.MachineConfigPool) bool) *mcfgv1.MachineConfigPool {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	p := &mcfgv1.MachineConfigPool{}
	for time.Now().Before(deadline) {
		if err := h.admin.Get(context.Background(), client.ObjectKey{Name: name}, p); err == nil && ok(p) {
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Fatalf("pool %s did not reach the expected state: %+v", name, p.Status)
	return nil
}

// config is a rollout with the drift gate enforced, predicted from the
// cluster as render would save it.
func (h *harness) config(pool string, img string) rollout.Config {
	return rollout.Config{
		Client: h.kiln, Pool: pool, Image: img,
		Timeout: 60 * time.Second, SettleTimeout: 30 * time.Second,
		Verifier: acceptAll{}, Out: testWriter{h.t},
		DriftGate: rollout.DriftGateEnforce, Prediction: h.predict(pool, img),
	}
}

// mcoInputs reads what render saves for the prediction, from the cluster.
func (h *harness) mcoInputs(pool string) *work.MCOInputs {
	h.t.Helper()
	ctx := context.Background()
	p := &mcfgv1.MachineConfigPool{}
	if err := h.admin.Get(ctx, client.ObjectKey{Name: pool}, p); err != nil {
		h.t.Fatal(err)
	}
	list := &mcfgv1.MachineConfigList{}
	if err := h.admin.List(ctx, list); err != nil {
		h.t.Fatal(err)
	}
	all := make([]*mcfgv1.MachineConfig, len(list.Items))
	for i := range list.Items {
		all[i] = &list.Items[i]
	}
	in, err := mcrender.NewMCOInputs(p, all, mcrender.Defaults{OSImageURL: payloadImage})
	if err != nil {
		h.t.Fatal(err)
	}
	return in
}

func (h *harness) predict(pool, img string) *mcrender.Prediction {
	h.t.Helper()
	p, err := mcrender.Predict(context.Background(), h.mcoInputs(pool), img)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

type acceptAll struct{}

func (acceptAll) Verify(context.Context, string) error { return nil }

type refuse struct{ reason string }

func (r refuse) Verify(_ context.Context, img string) error { return errors.New(r.reason) }

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log("\n" + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// maxConcurrent is the largest number of nodes updating at once according
// to the timeline: from UpdatePrepared going Unknown to UpdateComplete
// True, when MCO counts the node available again.
func maxConcurrent(tl []work.Event) int {
	busy, peak := map[string]bool{}, 0
	for _, e := range tl {
		switch {
		case e.Phase == string(mcfgv1.MachineConfigNodeUpdatePrepared) && e.Status == metav1.ConditionUnknown:
			busy[e.Node] = true
		case e.Phase == string(mcfgv1.MachineConfigNodeUpdateComplete) && e.Status == metav1.ConditionTrue:
			delete(busy, e.Node)
		}
		peak = max(peak, len(busy))
	}
	return peak
}

func updatedNodes(tl []work.Event) map[string]bool {
	out := map[string]bool{}
	for _, e := range tl {
		if e.Phase == string(mcfgv1.MachineConfigNodeUpdated) && e.Status == metav1.ConditionTrue {
			out[e.Node] = true
		}
	}
	return out
}

// kilnMC returns kiln's MachineConfig for the pool, or nil.
func (h *harness) kilnMC(pool string) *mcfgv1.MachineConfig {
	mc := &mcfgv1.MachineConfig{}
	if err := h.admin.Get(context.Background(), client.ObjectKey{Name: rollout.MachineConfigName(pool)}, mc); err != nil {
		return nil
	}
	return mc
}
