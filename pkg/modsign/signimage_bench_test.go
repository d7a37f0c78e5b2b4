package modsign_test

import (
	"crypto"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/modsign"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

// BenchmarkKmodSign is kmod-sign's whole job on an image with N real
// modules: pull, expand filesToSign, sign every .ko with kiln's Go signer,
// place the modules in /usr/lib/modules/<kver>/extra/ with depmod run for
// that kernel (one depmod process), rewrite the layer that held /opt and
// push. The reference, measured in the same loop
// after each of kiln's passes, is only the signing part done the shell
// way: Debian's sign-file run once per module (process start included). Each iteration gets a fresh
// in-process registry (go-containerregistry's, outside the timer) so the
// push really uploads the new layer.
func BenchmarkKmodSign(b *testing.B) {
	ko := env.BuildKernelModule(b, "kiln_bench", env.HelloModuleSource)
	mod, err := os.ReadFile(ko)
	if err != nil {
		b.Fatal(err)
	}
	signFile, err := env.SignFile()
	if err != nil {
		b.Fatal(err)
	}
	kp := kmodtest.NewKeyPair(b, "kiln bench signer")
	signer, err := modsign.NewSigner(kp.Cert, kp.Key, crypto.SHA256)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("modules=%d", n), func(b *testing.B) {
			img := modulesImage(b, mod, n)
			refDir := b.TempDir()
			var elapsed, ref time.Duration
			for b.Loop() {
				b.StopTimer()
				srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
				host := strings.TrimPrefix(srv.URL, "http://")
				src, _ := name.ParseReference(host+"/kmods/rhcos:unsigned", name.Insecure)
				dst, _ := name.ParseReference(host+"/kmods/rhcos:414", name.Insecure)
				if err := remote.Write(src, img); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				res, err := modsign.SignImage(b.Context(), modsign.SignImageInput{
					Source: src, Target: dst, Signer: signer,
					FilesToSign: []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/*.ko"},
				})
				elapsed += time.Since(start)
				b.StopTimer()
				if err != nil || len(res.Signed) != n {
					b.Fatalf("SignImage: %v (signed %d of %d)", err, len(res.Signed), n)
				}
				srv.Close()
				// The reference, interleaved so that both see the same load.
				ref += signFileRound(b, refDir, signFile, kp, mod, n)
				b.StartTimer()
			}
			b.ReportMetric(float64(ref.Nanoseconds())/float64(b.N), "signfile-ns/op")
			b.ReportMetric(float64(elapsed)/float64(ref), "ratio-vs-signfile")
		})
	}
}

// modulesImage is the unsigned kmod image: n copies of one module under
// /opt/lib/modules/<kver>/, on a small "OS" layer that names the kernel.
func modulesImage(b *testing.B, mod []byte, n int) v1.Image {
	b.Helper()
	files := map[string][]byte{
		"usr/lib/modules/" + kmodtest.Kernel + "/": nil,
		"opt/lib/modules/" + kmodtest.Kernel + "/": nil,
	}
	for i := range n {
		files[fmt.Sprintf("opt/lib/modules/%s/kiln_bench_%02d.ko", kmodtest.Kernel, i)] = mod
	}
	img, err := mutate.AppendLayers(empty.Image, env.TarLayer(b, files))
	if err != nil {
		b.Fatal(err)
	}
	return img
}

// signFileRound times sign-file over n fresh copies of the module (copies
// written outside the time).
func signFileRound(b *testing.B, dir, signFile string, kp kmodtest.KeyPair, mod []byte, n int) time.Duration {
	b.Helper()
	paths := make([]string, n)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("m%02d.ko", i))
		if err := os.WriteFile(paths[i], mod, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	for _, p := range paths {
		if out, err := exec.Command(signFile, "sha256", kp.KeyPEM, kp.CertPEM, p).CombinedOutput(); err != nil {
			b.Fatalf("sign-file: %v\n%s", err, out)
		}
	}
	return time.Since(start)
}
