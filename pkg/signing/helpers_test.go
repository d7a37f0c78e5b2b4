package signing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign"

	"github.com/kiln-dev/kiln/pkg/trust"
)

// The step's tests sign with a key pair of their own, on an image of their
// own, built from a node image's fixed inputs (pkg/sign's tests do the
// same for the library).

type keyPair struct {
	priv, pub, pass []byte
	pubPath         string
}

func newKeys(t *testing.T, pass string) keyPair {
	t.Helper()
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte(pass), nil })
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(p, kb.PublicBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	return keyPair{priv: kb.PrivateBytes, pub: kb.PublicBytes, pass: []byte(pass), pubPath: p}
}

// pushImage pushes a random image to repoTag and returns it by digest.
func pushImage(t *testing.T, host, repoTag string) string {
	t.Helper()
	img, _ := random.Image(1024, 1)
	ref, _ := name.ParseReference(host+"/"+repoTag, name.Insecure)
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return ref.Context().Digest(d.String()).String()
}

// testInputs are a node image's inputs with fixed digests.
func testInputs(t testing.TB, host string) trust.Inputs {
	t.Helper()
	in, err := trust.NodeImage{Pool: "worker", RenderedName: "rendered-worker-1", RenderedHash: "sha256:" + strings.Repeat("b", 64),
		BaseImage: host + "/base/os@sha256:" + strings.Repeat("c", 64), KmodDigests: []string{"sha256:" + strings.Repeat("d", 64)},
		Source: "https://github.com/kiln-dev/kiln", Builder: "fast"}.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	return in
}
