package rollout_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/mcosim"
)

func TestRollout(t *testing.T) {
	h := newHarness(t, 25*time.Millisecond)
	ctx := context.Background()

	t.Run("five nodes succeed", func(t *testing.T) {
		h.t = t
		h.pool("five", 5)
		res, err := rollout.Run(ctx, h.config("five", image(1)))
		if err != nil {
			t.Fatal(err)
		}
		if res.State != rollout.StateSucceeded || res.UpdatedNodes != 5 {
			t.Fatalf("result %s/%d, want Succeeded/5", res.State, res.UpdatedNodes)
		}
		if got := updatedNodes(res.Timeline); len(got) != 5 {
			t.Errorf("timeline shows %d nodes reaching Updated, want 5: %v", len(got), got)
		}
		mc := &mcfgv1.MachineConfig{}
		if err := h.admin.Get(ctx, client.ObjectKey{Name: "99-kiln-five-os-image"}, mc); err != nil {
			t.Fatal(err)
		}
		if mc.Spec.OSImageURL != image(1) || mc.Labels[rollout.RoleLabel] != "five" || mc.Labels[rollout.ManagedLabel] != "true" {
			t.Errorf("kiln's MachineConfig: osImageURL %q labels %v", mc.Spec.OSImageURL, mc.Labels)
		}
		if got := maxConcurrent(res.Timeline); got != 1 {
			t.Errorf("default maxUnavailable 1: %d nodes updated at once", got)
		}
		nodes := &corev1.NodeList{}
		if err := h.admin.List(ctx, nodes, client.HasLabels{"node-role.kubernetes.io/five"}); err != nil || len(nodes.Items) != 5 {
			t.Fatalf("listing nodes: %v", err)
		}
		for _, n := range nodes.Items {
			if got := n.Annotations[mcosim.CurrentImageAnnot]; got != image(1) || n.Annotations[mcosim.CurrentConfigAnnot] != res.Rendered {
				t.Errorf("node %s runs %q on %q, want %s on %s", n.Name, got, n.Annotations[mcosim.CurrentConfigAnnot], image(1), res.Rendered)
			}
		}
	})

	t.Run("maxUnavailable two is observed and never exceeded", func(t *testing.T) {
		h.t = t
		h.pool("wide", 6)
		cfg := h.config("wide", image(2))
		two := intstr.FromInt32(2)
		cfg.MaxUnavailable = &two
		res, err := rollout.Run(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := maxConcurrent(res.Timeline); got != 2 {
			t.Errorf("max nodes updating at once: %d, want exactly 2", got)
		}
		p := h.waitPool("wide", func(*mcfgv1.MachineConfigPool) bool { return true })
		if p.Spec.MaxUnavailable != nil || p.Annotations[rollout.OriginalMaxUnavailableAnnot] != "" {
			t.Errorf("pool maxUnavailable not restored: %v, annotations %v", p.Spec.MaxUnavailable, p.Annotations)
		}
	})

	t.Run("canary pauses, checks, resumes", func(t *testing.T) {
		h.t = t
		h.pool("canary", 4)
		var log strings.Builder
		cfg := h.config("canary", image(3))
		cfg.Canary = 1
		cfg.Out = &log
		res, err := rollout.Run(ctx, cfg)
		if err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		// The log wraps within 100 columns: read it as one line of words.
		flat := strings.Join(strings.Fields(log.String()), " ")
		for _, want := range []string{"canary: pool canary paused; waiting for [canary-", "healthy on rendered-canary-", "resuming pool canary"} {
			if !strings.Contains(flat, want) {
				t.Errorf("progress lacks %q", want)
			}
		}
		// The canary finished before any other node started.
		first := ""
		for _, e := range res.Timeline {
			if e.Phase == "UpdatePrepared" && e.Status == "Unknown" && first == "" {
				first = e.Node
			}
			if e.Phase == "UpdatePrepared" && e.Status == "Unknown" && e.Node != first && !updatedNodes(upTo(res.Timeline, e))[first] {
				t.Fatalf("node %s started before canary %s finished", e.Node, first)
			}
		}
		if p := h.waitPool("canary", func(*mcfgv1.MachineConfigPool) bool { return true }); p.Spec.Paused {
			t.Error("pool left paused")
		}
	})

	t.Run("degraded node rolls back", func(t *testing.T) {
		h.t = t
		h.pool("degr", 3)
		h.label("degr-1", map[string]string{mcosim.DegradeAtLabel: "Drained", mcosim.DegradeImageLabel: strings.TrimPrefix(image(4), "registry.test/kiln/worker@sha256:")[:60]})
		res, err := rollout.Run(ctx, h.config("degr", image(4)))
		want := "rollout of " + image(4) + " to pool degr failed: node degr-1: NodeDegraded: Drained failed: mcosim injected failure on node degr-1; rolled back to (payload default; kiln's MachineConfig deleted)"
		if err == nil || err.Error() != want {
			t.Fatalf("error:\n got %v\nwant %s", err, want)
		}
		if res.State != rollout.StateRolledBack {
			t.Errorf("state %s, want RolledBack", res.State)
		}
		if err := h.admin.Get(ctx, client.ObjectKey{Name: "99-kiln-degr-os-image"}, &mcfgv1.MachineConfig{}); !apierrors.IsNotFound(err) {
			t.Errorf("kiln's MachineConfig should be deleted by the rollback, got %v", err)
		}
		h.waitPool("degr", func(p *mcfgv1.MachineConfigPool) bool {
			return p.Status.DegradedMachineCount == 0 && p.Status.UpdatedMachineCount == 3
		})
	})

	t.Run("a failed rollback is reported as such", func(t *testing.T) {
		h.t = t
		h.pool("rbfail", 2)
		h.label("rbfail-1", map[string]string{mcosim.DegradeAtLabel: "Drained", mcosim.DegradeImageLabel: strings.TrimPrefix(image(7), "registry.test/kiln/worker@sha256:")[:60]})
		cfg := h.config("rbfail", image(7))
		// The apiserver is real; only the rollback's delete of kiln's
		// MachineConfig is refused, as a missing RBAC verb would be.
		cfg.Client = interceptor.NewClient(h.kiln, interceptor.Funcs{
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if _, ok := obj.(*mcfgv1.MachineConfig); ok {
					return apierrors.NewForbidden(mcfgv1.Resource("machineconfigs"), obj.GetName(), errors.New("injected"))
				}
				return c.Delete(ctx, obj, opts...)
			},
		})
		res, err := rollout.Run(ctx, cfg)
		if err == nil || !strings.Contains(err.Error(), "rollback failed") {
			t.Fatalf("error: %v", err)
		}
		if res.State != rollout.StateRollbackFailed {
			t.Errorf("state %s, want RollbackFailed", res.State)
		}
	})

	t.Run("timeout rolls back to the previous image", func(t *testing.T) {
		h.t = t
		h.pool("slow", 2)
		if _, err := rollout.Run(ctx, h.config("slow", image(5))); err != nil {
			t.Fatal(err)
		}
		cfg := h.config("slow", image(6))
		cfg.Timeout = 150 * time.Millisecond
		res, err := rollout.Run(ctx, cfg)
		if err == nil || !strings.Contains(err.Error(), "timed out") || !strings.HasSuffix(err.Error(), "rolled back to "+image(5)) {
			t.Fatalf("error: %v", err)
		}
		if res.State != rollout.StateRolledBack {
			t.Errorf("state %s", res.State)
		}
		mc := &mcfgv1.MachineConfig{}
		if err := h.admin.Get(ctx, client.ObjectKey{Name: "99-kiln-slow-os-image"}, mc); err != nil || mc.Spec.OSImageURL != image(5) {
			t.Errorf("osImageURL after rollback: %q (%v), want %s", mc.Spec.OSImageURL, err, image(5))
		}
	})

	t.Run("refused image writes nothing", func(t *testing.T) {
		h.t = t
		h.pool("refuse", 1)
		cfg := h.config("refuse", image(7))
		cfg.Verifier = refuse{reason: "no valid signature for the policy's sigstoreSigned requirement"}
		before := h.writes.Load()
		res, err := rollout.Run(ctx, cfg)
		if err == nil || !strings.Contains(err.Error(), "refusing to roll out "+image(7)+" to pool refuse: no valid signature") {
			t.Fatalf("error: %v", err)
		}
		if n := h.writes.Load() - before; n != 0 || res.State != rollout.StateRefused {
			t.Errorf("%d writes, state %s; want 0, Refused", n, res.State)
		}
		if _, err := rollout.Run(ctx, h.config("refuse", "registry.test/kiln/worker:latest")); err == nil || !strings.Contains(err.Error(), "is not a digest reference") {
			t.Errorf("tag reference: %v", err)
		}
	})

	t.Run("second run with the same digest is a no-op", func(t *testing.T) {
		h.t = t
		h.pool("again", 2)
		if _, err := rollout.Run(ctx, h.config("again", image(8))); err != nil {
			t.Fatal(err)
		}
		before := h.writes.Load()
		res, err := rollout.Run(ctx, h.config("again", image(8)))
		if err != nil {
			t.Fatal(err)
		}
		if n := h.writes.Load() - before; n != 0 || res.State != rollout.StateUnchanged {
			t.Errorf("second run: %d writes, state %s; want 0, Unchanged", n, res.State)
		}
	})

	t.Run("crash mid-rollout resumes", func(t *testing.T) {
		h.t = t
		h.pool("crash", 3)
		crashCtx, crash := context.WithCancel(ctx)
		go func() {
			h.waitPool("crash", func(p *mcfgv1.MachineConfigPool) bool { return p.Status.UpdatedMachineCount < 3 })
			crash()
		}()
		if _, err := rollout.Run(crashCtx, h.config("crash", image(9))); err == nil {
			t.Fatal("crashed run succeeded")
		}
		// The crashed run's rollback could not run: its context was gone.
		mc := &mcfgv1.MachineConfig{}
		if err := h.admin.Get(ctx, client.ObjectKey{Name: "99-kiln-crash-os-image"}, mc); err != nil || mc.Spec.OSImageURL != image(9) {
			t.Fatalf("after the crash: %v %q", err, mc.Spec.OSImageURL)
		}
		gen := mc.Generation
		res, err := rollout.Run(ctx, h.config("crash", image(9)))
		if err != nil {
			t.Fatal(err)
		}
		if res.UpdatedNodes != 3 {
			t.Errorf("resumed run updated %d nodes, want 3", res.UpdatedNodes)
		}
		if err := h.admin.Get(ctx, client.ObjectKey{Name: "99-kiln-crash-os-image"}, mc); err != nil || mc.Generation != gen {
			t.Errorf("the resumed run rewrote kiln's MachineConfig (generation %d → %d)", gen, mc.Generation)
		}
	})
}

func upTo(tl []work.Event, last work.Event) []work.Event {
	for i, e := range tl {
		if e == last {
			return tl[:i]
		}
	}
	return tl
}

func (h *harness) label(node string, labels map[string]string) {
	n := &corev1.Node{}
	if err := h.admin.Get(context.Background(), client.ObjectKey{Name: node}, n); err != nil {
		h.t.Fatal(err)
	}
	base := n.DeepCopy()
	for k, v := range labels {
		n.Labels[k] = v
	}
	if err := h.admin.Patch(context.Background(), n, client.MergeFrom(base)); err != nil {
		h.t.Fatal(err)
	}
}
