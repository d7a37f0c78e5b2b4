package rollout_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/test/mcosim"
)

// quirk switches mcosim's render quirk on: MCO sorts the kernel
// arguments, kiln's rule (and prediction) keeps them in merge order.
var quirk = map[string]string{mcosim.RenderQuirkAnnotation: mcosim.QuirkSortKernelArguments}

// unsorted kernel arguments, so the quirk changes the rendered name.
var unsorted = []string{"quiet", "audit=1"}

// TestDriftGate runs the drift gate against the real apiserver with
// mcosim as MCO: with the render quirk on, the rollout stops before any
// node moves; with it off, the gate passes.
func TestDriftGate(t *testing.T) {
	h := newHarness(t, 20*time.Millisecond)
	ctx := context.Background()

	t.Run("quirk on: DriftDetected, nodes stay on the old config, kiln's MachineConfig is gone, the diff names the field", func(t *testing.T) {
		h.t = t
		h.poolWith("drift", 2, poolSpec{annotations: quirk, kargs: unsorted})
		before := h.waitPool("drift", func(*mcfgv1.MachineConfigPool) bool { return true })
		prev := before.Spec.Configuration.Name
		cfg := h.config("drift", image(21))
		res, err := rollout.Run(ctx, cfg)
		if !errors.Is(err, rollout.ErrDriftDetected) || res.State != rollout.StateDriftDetected || res.Gate != rollout.GateDrift {
			t.Fatalf("state %s, gate %s, error %v; want DriftDetected", res.State, res.Gate, err)
		}
		d := res.Drift
		if d == nil || len(d.Differences) == 0 {
			t.Fatalf("no diff: %+v", d)
		}
		first := d.Differences[0]
		if first.Path != "spec.kernelArguments" || first.Kind != "kernel argument order" || first.SetBy != "50-drift-kargs" ||
			first.Kiln != `["quiet","audit=1"]` || first.MCO != `["audit=1","quiet"]` {
			t.Errorf("first difference %+v", first)
		}
		if d.Predicted != cfg.Prediction.Config.Name || d.Rendered == d.Predicted || !strings.Contains(err.Error(), "stopped before any node moved") {
			t.Errorf("predicted %s rendered %s; error %v", d.Predicted, d.Rendered, err)
		}
		if mc := h.kilnMC("drift"); mc != nil {
			t.Errorf("kiln's MachineConfig is still there: %s", mc.Spec.OSImageURL)
		}
		p := h.waitPool("drift", func(*mcfgv1.MachineConfigPool) bool { return true })
		if p.Spec.Configuration.Name != prev || p.Spec.Paused || p.Annotations[rollout.GatePausedAnnot] != "" {
			t.Errorf("pool on %s (paused %v, annotations %v), want back on %s, unpaused", p.Spec.Configuration.Name, p.Spec.Paused, p.Annotations, prev)
		}
		h.assertNodesOn("drift", prev)
		h.assertEvent("drift", rollout.EventReasonDrift, d.Rendered)
	})

	t.Run("quirk off: the gate passes and the rollout goes on", func(t *testing.T) {
		h.t = t
		h.poolWith("nodrift", 2, poolSpec{kargs: unsorted})
		res, err := rollout.Run(ctx, h.config("nodrift", image(22)))
		if err != nil || res.State != rollout.StateSucceeded || res.Gate != rollout.GatePassed {
			t.Fatalf("state %s, gate %s: %v", res.State, res.Gate, err)
		}
		if res.Predicted != res.Rendered || res.Drift != nil {
			t.Errorf("predicted %s, rendered %s, drift %+v", res.Predicted, res.Rendered, res.Drift)
		}
		h.assertNodesOn("nodrift", res.Rendered)
	})

	t.Run("a pool its owner paused is paused again after a drift", func(t *testing.T) {
		h.t = t
		h.poolWith("heldbyowner", 1, poolSpec{annotations: quirk, kargs: unsorted, paused: true})
		_, err := rollout.Run(ctx, h.config("heldbyowner", image(23)))
		if !errors.Is(err, rollout.ErrDriftDetected) {
			t.Fatalf("error %v", err)
		}
		if p := h.waitPool("heldbyowner", func(*mcfgv1.MachineConfigPool) bool { return true }); !p.Spec.Paused || p.Annotations[rollout.GatePausedAnnot] != "" {
			t.Errorf("paused %v, annotations %v; want paused, no gate annotation", p.Spec.Paused, p.Annotations)
		}
	})

	t.Run("warn: the drift is recorded and the rollout goes on with MCO's config", func(t *testing.T) {
		h.t = t
		h.poolWith("warned", 1, poolSpec{annotations: quirk, kargs: unsorted})
		cfg := h.config("warned", image(24))
		cfg.DriftGate = rollout.DriftGateWarn
		res, err := rollout.Run(ctx, cfg)
		if err != nil || res.State != rollout.StateSucceeded || res.Gate != rollout.GateDrift || res.Drift == nil {
			t.Fatalf("state %s, gate %s, drift %v: %v", res.State, res.Gate, res.Drift != nil, err)
		}
		if res.Rendered != res.Drift.Rendered {
			t.Errorf("rolled out %s, MCO rendered %s", res.Rendered, res.Drift.Rendered)
		}
		h.assertNodesOn("warned", res.Rendered)
		h.assertEvent("warned", rollout.EventReasonDrift, res.Drift.Rendered)
	})

	t.Run("a run that crashed while the gate held the pool compares on resume", func(t *testing.T) {
		h.t = t
		h.poolWith("resumed", 1, poolSpec{kargs: unsorted})
		cfg := h.config("resumed", image(26))
		// The crashed run had paused the pool and written kiln's MachineConfig.
		h.patchPool("resumed", func(p *mcfgv1.MachineConfigPool) {
			p.Annotations = map[string]string{rollout.GatePausedAnnot: "false"}
			p.Spec.Paused = true
		})
		p := h.waitPool("resumed", func(*mcfgv1.MachineConfigPool) bool { return true })
		mc, err := mcrender.OSImageConfig(p, image(26))
		if err != nil {
			t.Fatal(err)
		}
		if err := h.admin.Create(ctx, mc); err != nil {
			t.Fatal(err)
		}
		res, err := rollout.Run(ctx, cfg)
		if err != nil || res.State != rollout.StateUnchanged || res.Gate != rollout.GatePassed {
			t.Fatalf("state %s, gate %s: %v; want Unchanged (nothing written) with the gate passed", res.State, res.Gate, err)
		}
		if p := h.waitPool("resumed", func(*mcfgv1.MachineConfigPool) bool { return true }); p.Spec.Paused || p.Annotations[rollout.GatePausedAnnot] != "" {
			t.Errorf("paused %v, annotations %v", p.Spec.Paused, p.Annotations)
		}
		h.assertNodesOn("resumed", res.Rendered)
	})

	t.Run("without a prediction the gate refuses before any write, unless there is nothing to write", func(t *testing.T) {
		h.t = t
		h.pool("unpredicted", 1)
		cfg := h.config("unpredicted", image(27))
		cfg.Prediction = nil
		before := h.writes.Load()
		res, err := rollout.Run(ctx, cfg)
		if err == nil || !strings.Contains(err.Error(), "needs kiln's prediction") || res.State != rollout.StateRefused || h.writes.Load() != before {
			t.Fatalf("state %s, %d writes: %v", res.State, h.writes.Load()-before, err)
		}
		off := h.config("unpredicted", image(27))
		off.DriftGate, off.Prediction = rollout.DriftGateOff, nil
		if _, err := rollout.Run(ctx, off); err != nil {
			t.Fatal(err)
		}
		// The image is out: a run of the same image writes nothing and needs no prediction.
		if res, err := rollout.Run(ctx, cfg); err != nil || res.State != rollout.StateUnchanged || res.Gate != rollout.GateSkipped {
			t.Errorf("second run: state %s, gate %s: %v", res.State, res.Gate, err)
		}
	})

	t.Run("off: no gate, MCO's config rolls out", func(t *testing.T) {
		h.t = t
		h.poolWith("ungated", 1, poolSpec{annotations: quirk, kargs: unsorted})
		cfg := h.config("ungated", image(25))
		cfg.DriftGate, cfg.Prediction = rollout.DriftGateOff, nil
		res, err := rollout.Run(ctx, cfg)
		if err != nil || res.State != rollout.StateSucceeded || res.Gate != rollout.GateOff {
			t.Fatalf("state %s, gate %s: %v", res.State, res.Gate, err)
		}
	})
}

func (h *harness) patchPool(name string, edit func(*mcfgv1.MachineConfigPool)) {
	h.t.Helper()
	p := &mcfgv1.MachineConfigPool{}
	if err := h.admin.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
		h.t.Fatal(err)
	}
	base := p.DeepCopy()
	edit(p)
	if err := h.admin.Patch(context.Background(), p, client.MergeFrom(base)); err != nil {
		h.t.Fatal(err)
	}
}

// assertNodesOn: every node of the pool runs and wants rendered.
func (h *harness) assertNodesOn(pool, rendered string) {
	h.t.Helper()
	nodes := &corev1.NodeList{}
	if err := h.admin.List(context.Background(), nodes, client.HasLabels{"node-role.kubernetes.io/" + pool}); err != nil || len(nodes.Items) == 0 {
		h.t.Fatalf("listing nodes of %s: %v", pool, err)
	}
	for _, n := range nodes.Items {
		cur, want := n.Annotations[mcosim.CurrentConfigAnnot], n.Annotations[mcosim.DesiredConfigAnnot]
		if cur != rendered || want != rendered {
			h.t.Errorf("node %s: current %s, desired %s; want both %s", n.Name, cur, want, rendered)
		}
		mcn := &mcfgv1.MachineConfigNode{}
		if err := h.admin.Get(context.Background(), client.ObjectKey{Name: n.Name}, mcn); err != nil || mcn.Spec.ConfigVersion.Desired != rendered {
			h.t.Errorf("MachineConfigNode %s desires %q (%v), want %s", n.Name, mcn.Spec.ConfigVersion.Desired, err, rendered)
		}
	}
}

// assertEvent: a Warning event with reason on the pool names rendered.
func (h *harness) assertEvent(pool, reason, rendered string) {
	h.t.Helper()
	evs := &corev1.EventList{}
	if err := h.admin.List(context.Background(), evs, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		h.t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "MachineConfigPool" && e.InvolvedObject.Name == pool && e.Reason == reason &&
			e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, rendered) {
			return
		}
	}
	h.t.Errorf("no %s event on pool %s naming %s among %d events", reason, pool, rendered, len(evs.Items))
}
