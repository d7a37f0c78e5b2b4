package rollout_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/rollout"
)

// BenchmarkRolloutDriftGate rolls a new image out to a one-node pool per
// iteration with the drift gate enforced, and, as the reference measured in
// the same run, to an identical pool with the gate off (real apiserver,
// mcosim as MCO). The gate adds a pause and an unpause around the wait for
// MCO's render, which the rollout makes anyway: ratio-vs-no-gate says what
// it costs, gate-added-ms/op the same in time, and
// gate-added-vs-render-round-trip compares that with one MCO render round
// trip (an MC edit until the pool's spec names the new rendered config),
// measured on a third pool in the same run: the bound is one.
func BenchmarkRolloutDriftGate(b *testing.B) {
	h := newHarness(b, time.Millisecond)
	h.pool("benchoff", 1)
	h.pool("benchon", 1)
	h.pool("benchrt", 1)
	ctx := context.Background()
	var off, on, rt time.Duration
	n := 0
	run := func(cfg rollout.Config) time.Duration {
		cfg.Out = io.Discard
		start := time.Now()
		res, err := rollout.Run(ctx, cfg)
		took := time.Since(start)
		if err != nil || res.State != rollout.StateSucceeded {
			b.Fatalf("%s: %s: %v", cfg.Pool, res.State, err)
		}
		return took
	}
	for b.Loop() {
		n++
		ref := h.config("benchoff", image(1000+n))
		ref.DriftGate, ref.Prediction = rollout.DriftGateOff, nil
		off += run(ref)
		// The prediction is image-sign's work; only the rollout is timed.
		on += run(h.config("benchon", image(2000+n)))
		rt += h.renderRoundTrip("benchrt", n)
	}
	b.ReportMetric(float64(off.Nanoseconds())/float64(n), "no-gate-ns/op")
	b.ReportMetric(float64(on.Nanoseconds())/float64(n), "gate-ns/op")
	b.ReportMetric(float64(on-off)/float64(n)/float64(time.Millisecond), "gate-added-ms/op")
	b.ReportMetric(float64(on)/float64(off), "ratio-vs-no-gate")
	b.ReportMetric(float64(rt.Nanoseconds())/float64(n)/float64(time.Millisecond), "render-round-trip-ms/op")
	b.ReportMetric(float64(on-off)/float64(rt), "gate-added-vs-render-round-trip")
}

// renderRoundTrip edits the pool's base MC and times until MCO (mcosim)
// points the pool's spec at a new rendered config.
func (h *harness) renderRoundTrip(pool string, n int) time.Duration {
	ctx := context.Background()
	p := &mcfgv1.MachineConfigPool{}
	if err := h.admin.Get(ctx, client.ObjectKey{Name: pool}, p); err != nil {
		h.t.Fatal(err)
	}
	before := p.Spec.Configuration.Name
	mc := &mcfgv1.MachineConfig{}
	if err := h.admin.Get(ctx, client.ObjectKey{Name: "00-" + pool}, mc); err != nil {
		h.t.Fatal(err)
	}
	base := mc.DeepCopy()
	mc.Spec.KernelArguments = []string{fmt.Sprintf("kiln.bench=%d", n)}
	start := time.Now()
	if err := h.admin.Patch(ctx, mc, client.MergeFrom(base)); err != nil {
		h.t.Fatal(err)
	}
	for time.Since(start) < 30*time.Second {
		if err := h.admin.Get(ctx, client.ObjectKey{Name: pool}, p); err == nil && p.Spec.Configuration.Name != before {
			return time.Since(start)
		}
		time.Sleep(time.Millisecond)
	}
	h.t.Fatalf("pool %s was not rendered again", pool)
	return 0
}
