package proof_test

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign"

	"github.com/kiln-dev/kiln/pkg/trust"
)

// keyPair is a cosign key pair: the encrypted private key, the public
// key and the password.
type keyPair struct{ priv, pub, pass []byte }

func newKeys(t *testing.T, pass string) keyPair {
	t.Helper()
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte(pass), nil })
	if err != nil {
		t.Fatal(err)
	}
	return keyPair{priv: kb.PrivateBytes, pub: kb.PublicBytes, pass: []byte(pass)}
}

// pushImage pushes a random image to repoTag and returns it by digest.
func pushImage(t *testing.T, host, repoTag string) string {
	t.Helper()
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host+"/"+repoTag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
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
