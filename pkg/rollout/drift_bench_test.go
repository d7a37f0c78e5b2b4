package rollout_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/kiln-dev/kiln/pkg/rollout"
)

// BenchmarkRolloutDriftGate rolls a new image out to a one-node pool per
// iteration with the drift gate enforced, and, as the reference measured in
// the same run, to an identical pool with the gate off (real apiserver,
// mcosim as MCO). The gate adds a pause and an unpause around the wait for
// MCO's render, which the rollout makes anyway: ratio-vs-no-gate says what
// it costs, gate-added-ms/op the same in time.
func BenchmarkRolloutDriftGate(b *testing.B) {
	h := newHarness(b, time.Millisecond)
	h.pool("benchoff", 1)
	h.pool("benchon", 1)
	ctx := context.Background()
	var off, on time.Duration
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
	}
	b.ReportMetric(float64(off.Nanoseconds())/float64(n), "no-gate-ns/op")
	b.ReportMetric(float64(on.Nanoseconds())/float64(n), "gate-ns/op")
	b.ReportMetric(float64(on-off)/float64(n)/float64(time.Millisecond), "gate-added-ms/op")
	b.ReportMetric(float64(on)/float64(off), "ratio-vs-no-gate")
}
