package bootimage

import (
	"context"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
)

// BenchmarkFleet2000 runs a pass over 2000 GCP MachineSets of which 10% are
// stale, on test/env's apiserver, and counts every request the pass makes
// that is not a GET, by verb and resource. The reference is the physical
// floor, measured in the same loop and interleaved with the pass: one list
// plus one merge patch per stale MachineSet (the step that makes them stale
// again before each pass; outside ns/op). Metrics: writes/op and each kind
// of write per op, floor-writes/op (200), writes/floor, reads/op and
// floor-reads/op (GETs and lists), ref-ns/op and ours/ref.
func BenchmarkFleet2000(b *testing.B) {
	const total = 2000
	tc := startCluster(b, configv1.GCPPlatformType)
	ctx := context.Background()
	tc.setOptIn(b, mapi(operatorv1.All, nil))
	f := newFleet(b, tc, total)
	r := tc.reconciler(MachineAPINamespace)
	stale := f.stale()

	byKind := map[string]int{}
	var writes, floor, reads, floorReads int
	var ours, ref time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// The floor first: it makes the 200 MachineSets stale again.
		b.StopTimer()
		tc.counter.reset()
		start := time.Now()
		f.makeStale(b)
		ref += time.Since(start)
		floor += tc.counter.total()
		floorReads += tc.counter.reads
		b.StartTimer()

		tc.counter.reset()
		start = time.Now()
		rep, err := r.Run(ctx)
		ours += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.Patched) != stale {
			b.Fatalf("patched %d, want %d", len(rep.Patched), stale)
		}
		for k, v := range tc.counter.snapshot() {
			byKind[k] += v
			writes += v
		}
		reads += tc.counter.reads
	}
	b.StopTimer()
	n := float64(b.N)
	for k, v := range byKind {
		b.ReportMetric(float64(v)/n, strings.ReplaceAll(k, " ", "-")+"/op")
	}
	b.ReportMetric(float64(writes)/n, "writes/op")
	b.ReportMetric(float64(floor)/n, "floor-writes/op")
	b.ReportMetric(float64(writes)/float64(floor), "writes/floor")
	b.ReportMetric(float64(reads)/n, "reads/op")
	b.ReportMetric(float64(floorReads)/n, "floor-reads/op")
	b.ReportMetric(float64(ref.Nanoseconds())/n, "ref-ns/op")
	b.ReportMetric(float64(ours)/float64(ref), "ours/ref")
	perKind := map[string]int{}
	for k, v := range byKind {
		perKind[k] = v / b.N
	}
	b.Logf("ours %s/op, floor (list + %d patches) %s/op, time ratio %.2f; writes/op %d (%s), floor %d, ratio %.2f; reads/op %d, floor %d",
		ours/time.Duration(b.N), stale, ref/time.Duration(b.N), float64(ours)/float64(ref),
		writes/b.N, writesString(perKind), floor/b.N, float64(writes)/float64(floor), reads/b.N, floorReads/b.N)
}
