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
// way a release image is built. The reference, measured in the same run,
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
	const refRuns = 20
	start := time.Now()
	for range refRuns {
		data, err := extractFile(img, ImageReferencesPath)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ParseImageReferences(data); err != nil {
			b.Fatal(err)
		}
	}
	refPerOp := float64(time.Since(start).Nanoseconds()) / refRuns

	b.ResetTimer()
	for b.Loop() {
		data, err := ReadImageFile(img, ImageReferencesPath)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ParseImageReferences(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(refPerOp, "extract-ns/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/refPerOp, "ratio-vs-extract")
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
