package env

import (
	"crypto/rand"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// AddJunkLayer appends a layer of size random bytes, of the artifact's own
// media type, to the image's cosign .sig or .att artifact (suffix), as
// anyone with push access to the repository can.
func AddJunkLayer(t testing.TB, image name.Digest, suffix, mediaType string, size int) {
	t.Helper()
	tag := image.Context().Tag(strings.Replace(image.DigestStr(), ":", "-", 1) + "." + suffix)
	art, err := remote.Image(tag)
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, size)
	rand.Read(junk)
	art, err = mutate.Append(art, mutate.Addendum{Layer: static.NewLayer(junk, types.MediaType(mediaType)),
		Annotations: map[string]string{"dev.cosignproject.cosign/signature": "anVuaw=="}})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, art); err != nil {
		t.Fatal(err)
	}
}
