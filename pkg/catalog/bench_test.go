package catalog

import (
	"context"
	"testing"
	"time"
)

// BenchmarkFiles measures rendering the whole catalog (samples built and
// validated, READMEs, metadata) against the reference measured in the same
// loop, one after each rendering: loading the sources, which is Tekton's
// defaulting and validation of every Task and Pipeline. The ratio says
// what generation adds on top.
func BenchmarkFiles(b *testing.B) {
	ctx := context.Background()
	rs := loadRepo(b)
	// One untimed run of each first: whatever either side sets up on first
	// use is not inside the loop (with -benchtime 1x it decided the ratio).
	if _, err := Files(ctx, rs); err != nil {
		b.Fatal(err)
	}
	if _, err := Load(ctx, repoRoot); err != nil {
		b.Fatal(err)
	}
	var gen, load time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := Files(ctx, rs); err != nil {
			b.Fatal(err)
		}
		gen += time.Since(start)
		// The reference, interleaved so that both see the same load.
		b.StopTimer()
		start = time.Now()
		if _, err := Load(ctx, repoRoot); err != nil {
			b.Fatal(err)
		}
		load += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(load.Nanoseconds())/float64(b.N), "load-ns/op")
	b.ReportMetric(float64(gen)/float64(load), "x-load")
}
