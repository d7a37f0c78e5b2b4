package examples

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kiln-dev/kiln/pkg/nodeimport"
)

// sampleWithConfig is the sample's own base image (examples.BaseImage)
// with a config layer of 40 /etc files and a unit, as the fast path
// appends one.
func sampleWithConfig(tb testing.TB) v1.Image {
	tb.Helper()
	base, err := BaseImage()
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, body []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}); err != nil {
			tb.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range 40 {
		add(fmt.Sprintf("etc/kiln/file%d.conf", i), bytes.Repeat([]byte("x"), 1024))
	}
	add("etc/systemd/system/kiln.service", []byte("[Unit]\n"))
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	b := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		tb.Fatal(err)
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		tb.Fatal(err)
	}
	return img
}

// TestSampleBasePassesTheNodeCheck: the sample's stand-in RHCOS base with
// a config layer is an image a node imports: no error finding, the
// config's /etc files committed under /usr/etc.
func TestSampleBasePassesTheNodeCheck(t *testing.T) {
	tree, fs, err := nodeimport.Import(sampleWithConfig(t), nodeimport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := nodeimport.Check(fs); err != nil {
		t.Fatal(err)
	}
	if _, ok := tree.Entries["/usr/etc/kiln/file0.conf"]; !ok {
		t.Errorf("/etc/kiln/file0.conf is not committed at /usr/etc/kiln/file0.conf")
	}
}

// BenchmarkImportSampleBase measures the node check on the sample's base
// plus a config layer against reading the same layers (decompress and
// walk the tar entries); the check must stay within 2 s per image.
func BenchmarkImportSampleBase(b *testing.B) {
	img := sampleWithConfig(b)
	layers, err := img.Layers()
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range layers {
		if _, err := l.Digest(); err != nil { // compress once, as a registry holds it
			b.Fatal(err)
		}
	}
	b.Run("reference-read", func(b *testing.B) {
		for b.Loop() {
			for _, l := range layers {
				rc, err := l.Uncompressed()
				if err != nil {
					b.Fatal(err)
				}
				tr := tar.NewReader(rc)
				for {
					if _, err := tr.Next(); err != nil {
						break
					}
					if _, err := io.Copy(io.Discard, tr); err != nil {
						b.Fatal(err)
					}
				}
				rc.Close()
			}
		}
	})
	b.Run("import-and-lint", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			if _, _, err := nodeimport.Import(img, nodeimport.Options{}); err != nil {
				b.Fatal(err)
			}
		}
		per := time.Since(start) / time.Duration(b.N)
		b.Logf("node check of the sample base + config layer: %v per image (limit 2s)", per)
		if per > 2*time.Second {
			b.Fatalf("node check took %v per image, over the 2 s budget", per)
		}
	})
}
