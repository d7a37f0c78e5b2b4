package imagebuild

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// reuseBudget is the most the no-op reuse decision may take (issue 17).
const reuseBudget = 100 * time.Millisecond

// BenchmarkReuseDecision measures image-build's no-op decision on a real
// registry: the fingerprint tag's lookup and sign.Prove (cosign's
// signature and attestation checks with kiln's key, and the exact
// comparison of the attested inputs) for an image kiln built and signed.
// The reference, measured in the same loop, is a bare HEAD of the tag: the
// one round trip any reuse needs. It fails when the decision writes to the
// registry, does not reuse, or takes more than reuseBudget on average.
func BenchmarkReuseDecision(b *testing.B) {
	reg := env.StartRegistry(b, env.RegistryOptions{})
	ctx := context.Background()
	imagetest.PushBase(b, reg.Host, "base/os:1", 3)
	key := imagetest.NewCosignKey(b)
	wc := &env.WriteCounter{Next: http.DefaultTransport}
	r := registry.Remote{Insecure: []string{reg.Host}, Transport: wc}
	in := testInput(b, reg.Host, "base/os:1", "kiln/os", "bench\n")
	res, err := Build(ctx, r, in)
	if err != nil {
		b.Fatal(err)
	}
	key.Sign(b, r, res.Ref, res.Inputs)
	opts, err := r.Options(ctx)
	if err != nil {
		b.Fatal(err)
	}
	tag, err := name.NewTag(reg.Host+"/kiln/os:"+res.Tag, name.Insecure)
	if err != nil {
		b.Fatal(err)
	}
	before := wc.Writes()
	var decision, head time.Duration
	for b.Loop() {
		start := time.Now()
		got := &BuildResult{Inputs: res.Inputs}
		ok, err := got.reuse(ctx, r, tag, key.ID)
		decision += time.Since(start)
		if err != nil || !ok || got.Digest != res.Digest {
			b.Fatalf("reuse decision: ok=%v digest %s rejected %q err %v, want reuse of %s", ok, got.Digest, got.Rejected, err, res.Digest)
		}
		start = time.Now()
		if _, err := remote.Head(tag, opts...); err != nil {
			b.Fatal(err)
		}
		head += time.Since(start)
	}
	n := time.Duration(b.N)
	writes := wc.Writes() - before
	b.ReportMetric(float64(decision/n)/1e6, "decision-ms/op")
	b.ReportMetric(float64(head/n)/1e6, "head-ms/op")
	b.ReportMetric(float64(decision)/float64(head), "decision/head")
	b.ReportMetric(float64(writes), "registry-writes")
	fmt.Printf("bench-reuse  decision %.2f ms/op  bare HEAD %.2f ms/op  ratio %.1f  registry writes %d  (budget %v)\n",
		float64(decision/n)/1e6, float64(head/n)/1e6, float64(decision)/float64(head), writes, reuseBudget)
	if writes > 0 {
		b.Fatalf("the reuse decision made %d registry writes, want 0", writes)
	}
	if decision/n > reuseBudget {
		b.Fatalf("the reuse decision takes %v, over the %v budget", decision/n, reuseBudget)
	}
}
