package payload

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"path"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/kiln-dev/kiln/test/env"
)

// BenchmarkReadImageReferences reads and parses image-references from a
// release-like image: a 32 MiB base layer under the manifests layer, the
// way a release image is built. The reference, measured in the same loop,
// is go-containerregistry's mutate.Extract stopping at the first hit (it
// also walks layers top down); ReadImageFile exists for opaque folders,
// which Extract does not honour, and must not cost more.
func BenchmarkReadImageReferences(b *testing.B) {
	base, err := random.Layer(32<<20, "application/vnd.oci.image.layer.v1.tar")
	if err != nil {
		b.Fatal(err)
	}
	img, err := mutate.AppendLayers(env.ReleaseImage(b, "4.20.0", testTags), base)
	if err != nil {
		b.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, env.TarLayer(b, map[string][]byte{
		ImageReferencesPath: env.ImageReferences("4.20.0", testTags),
	})); err != nil {
		b.Fatal(err)
	}
	// One untimed read by each first: the image's layers are computed on
	// first use, which neither side should pay inside the loop.
	if _, err := ReadImageFile(img, ImageReferencesPath); err != nil {
		b.Fatal(err)
	}
	if _, err := extractFile(img, ImageReferencesPath); err != nil {
		b.Fatal(err)
	}
	var ours, ref time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		data, err := ReadImageFile(img, ImageReferencesPath)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ParseImageReferences(data); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		// The reference, interleaved so that both see the same load.
		b.StopTimer()
		start = time.Now()
		if data, err = extractFile(img, ImageReferencesPath); err != nil {
			b.Fatal(err)
		}
		if _, err := ParseImageReferences(data); err != nil {
			b.Fatal(err)
		}
		ref += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(ref.Nanoseconds())/float64(b.N), "extract-ns/op")
	b.ReportMetric(float64(ours)/float64(ref), "ratio-vs-extract")
}

// extractFile takes p from mutate.Extract's flattened stream and closes it
// at the first hit.
func extractFile(img v1.Image, p string) ([]byte, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, errors.Join(errors.New("not found"), err)
		}
		if path.Clean(h.Name) == p {
			var buf bytes.Buffer
			_, err := io.Copy(&buf, tr)
			return buf.Bytes(), err
		}
	}
}
