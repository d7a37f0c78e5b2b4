package nodeimport

import (
	"archive/tar"
	"crypto/rand"
	"fmt"
	"io"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// sampleImage is shaped like the sample's images: a base of a few MB (a
// kernel, an initramfs, a few hundred small files in /usr and /etc) and a
// config layer of a few dozen files, both gzip-compressed.
func sampleImage(tb testing.TB) v1.Image {
	tb.Helper()
	noise := func(n int) string {
		b := make([]byte, n)
		if _, err := rand.Read(b); err != nil {
			tb.Fatal(err)
		}
		return string(b)
	}
	base := []ent{reg("usr/lib/modules/5.14.0/vmlinuz", noise(3<<20)), reg("usr/lib/modules/5.14.0/initramfs.img", noise(2<<20))}
	for i := range 400 {
		base = append(base, reg(fmt.Sprintf("usr/share/doc/pkg%d/README", i), noise(2048)))
	}
	for i := range 100 {
		base = append(base, reg(fmt.Sprintf("etc/conf%d.conf", i), noise(512)))
	}
	var config []ent
	for i := range 40 {
		config = append(config, reg(fmt.Sprintf("etc/kiln/file%d", i), noise(1024)))
	}
	img := empty.Image
	for _, l := range [][]ent{base, config} {
		layer, err := tarball.LayerFromOpener(opener(tarOf(tb, l)))
		if err != nil {
			tb.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			tb.Fatal(err)
		}
	}
	// Compress once, outside the measured loop, as a registry holds it.
	for _, l := range mustLayers(tb, img) {
		if _, err := l.Digest(); err != nil {
			tb.Fatal(err)
		}
	}
	return img
}

func mustLayers(tb testing.TB, img v1.Image) []v1.Layer {
	ls, err := img.Layers()
	if err != nil {
		tb.Fatal(err)
	}
	return ls
}

// BenchmarkImportSample measures the per-image node check on a
// sample-sized image against a reference that only decompresses and
// walks the same tar streams; the check must stay within 2 s.
func BenchmarkImportSample(b *testing.B) {
	img := sampleImage(b)
	b.Run("reference-read", func(b *testing.B) {
		for b.Loop() {
			for _, l := range mustLayers(b, img) {
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
			_, fs, err := Import(img, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := Check(fs); err != nil {
				b.Fatal(err)
			}
		}
		per := time.Since(start) / time.Duration(b.N)
		b.Logf("node check of the sample-sized image: %v per image (limit 2s)", per)
		if per > 2*time.Second {
			b.Fatalf("node check took %v per image, over the 2 s budget", per)
		}
	})
}
