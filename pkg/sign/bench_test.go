package sign

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

// BenchmarkSignAndVerify signs a fresh image (signature + provenance) and
// runs the node's policy check on it, against the real registry. The
// reference, measured in the same loop between kiln's operations, is pushing two small images with
// plain go-containerregistry: the registry round trips signing cannot
// avoid. The ratio says what cosign and the policy evaluation add.
func BenchmarkSignAndVerify(b *testing.B) {
	ctx := context.Background()
	reg := env.StartRegistry(b, env.RegistryOptions{})
	r := registry.Remote{Insecure: []string{reg.Host}}
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte("pw"), nil })
	if err != nil {
		b.Fatal(err)
	}
	pub := filepath.Join(b.TempDir(), "cosign.pub")
	if err := os.WriteFile(pub, kb.PublicBytes, 0o644); err != nil {
		b.Fatal(err)
	}
	push := func(i int, repo string) string {
		img, _ := random.Image(256, 1)
		ref, _ := name.ParseReference(fmt.Sprintf("%s/%s:%d", reg.Host, repo, i), name.Insecure)
		if err := remote.Write(ref, img); err != nil {
			b.Fatal(err)
		}
		d, _ := img.Digest()
		return ref.Context().Digest(d.String()).String()
	}
	var ours, ref time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		img := push(i, "kiln/os")
		b.StartTimer()
		start := time.Now()
		if _, err := Sign(ctx, r, SignInput{Image: img, Key: kb.PrivateBytes, Password: []byte("pw"), Inputs: testInputs(b, reg.Host)}); err != nil {
			b.Fatal(err)
		}
		if _, err := VerifyPolicy(ctx, PolicyInput{Image: img, KeyPath: pub, Insecure: true, OutDir: b.TempDir()}); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		// The reference, interleaved so that both see the same load.
		b.StopTimer()
		start = time.Now()
		push(i, "ref/a")
		push(i, "ref/b")
		ref += time.Since(start)
		i++
		b.StartTimer()
	}
	b.ReportMetric(float64(ref.Nanoseconds())/float64(b.N), "push-floor-ns/op")
	b.ReportMetric(float64(ours)/float64(ref), "ratio-vs-push")
}
