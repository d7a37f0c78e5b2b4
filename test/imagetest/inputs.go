package imagetest

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// PushRandomImage pushes a random image to repoTag and returns it by digest.
func PushRandomImage(t *testing.T, host, repoTag string) string {
	t.Helper()
	img, _ := random.Image(1024, 1)
	ref, _ := name.ParseReference(host+"/"+repoTag, name.Insecure)
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return ref.Context().Digest(d.String()).String()
}

// NodeInputs are a node image's inputs with fixed digests.
func NodeInputs(t testing.TB, host string) trust.Inputs {
	t.Helper()
	in, err := trust.NodeImage{Pool: "worker", RenderedName: "rendered-worker-1", RenderedHash: "sha256:" + strings.Repeat("b", 64),
		BaseImage: host + "/base/os@sha256:" + strings.Repeat("c", 64), KmodDigests: []string{"sha256:" + strings.Repeat("d", 64)},
		Source: "https://github.com/kiln-dev/kiln", Builder: "fast"}.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	return in
}
