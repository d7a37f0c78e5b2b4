package modsign_test

import (
	"crypto"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kiln-dev/kiln/pkg/modsign"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

// BenchmarkSignModule signs a real module with kiln's signer and reports
// the ratio to the kernel's scripts/sign-file (process start included, as
// a kmod-sign step would pay it per module) measured in the same loop,
// one sign-file run after each of kiln's signatures.
func BenchmarkSignModule(b *testing.B) {
	ko := env.BuildKernelModule(b, "kiln_bench", env.HelloModuleSource)
	unsigned, err := os.ReadFile(ko)
	if err != nil {
		b.Fatal(err)
	}
	kp := kmodtest.NewKeyPair(b, "kiln bench signer")
	signFile, err := env.SignFile()
	if err != nil {
		b.Fatal(err)
	}
	work := filepath.Join(b.TempDir(), "ref.ko")
	s, err := modsign.NewSigner(kp.Cert, kp.Key, crypto.SHA256)
	if err != nil {
		b.Fatal(err)
	}
	var ours, ref time.Duration
	b.SetBytes(int64(len(unsigned)))
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := s.Sign(unsigned); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		// The reference, interleaved so that both see the same load.
		b.StopTimer()
		start = time.Now()
		if err := os.WriteFile(work, unsigned, 0o644); err != nil {
			b.Fatal(err)
		}
		if out, err := exec.Command(signFile, "sha256", kp.KeyPEM, kp.CertPEM, work).CombinedOutput(); err != nil {
			b.Fatalf("sign-file: %v\n%s", err, out)
		}
		ref += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(ref.Nanoseconds())/float64(b.N), "signfile-ns/op")
	b.ReportMetric(float64(ours)/float64(ref), "ratio-vs-signfile")
}
