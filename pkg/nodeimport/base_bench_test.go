package nodeimport

import (
	"fmt"
	"io"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// BenchmarkResumeOnBase measures the node check of a config change on a
// base of 60,000 small files (the file count of an RHCOS base), read
// whole as the reference, against resuming from the base's encoded state
// (decoding it, then reading the config layer alone), which is what a
// build with the node import cache does.
func BenchmarkResumeOnBase(b *testing.B) {
	var base []ent
	base = append(base, kernel("5.14.0")...)
	for i := range 60000 {
		base = append(base, reg(fmt.Sprintf("usr/share/pkg%d/file%d", i/50, i), "0123456789abcdef"))
	}
	layers := []func() (io.ReadCloser, error){gzipped(b, tarOf(b, base)), gzipped(b, tarOf(b, []ent{reg("etc/motd", "hi\n")}))}
	opts := Options{NoDigests: true}
	b.Run("reference-full-read", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := ImportTars(layers, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	bs, err := ReadBase(layers[:1], opts)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := bs.MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("resume-from-encoded-base", func(b *testing.B) {
		b.ReportMetric(float64(len(raw)), "entry-bytes")
		for b.Loop() {
			bs, err := UnmarshalBase(raw)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := bs.Import(layers[1:]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// gzipped is an opener of raw's tar stream as a registry serves a layer:
// gzip-compressed once, decompressed on every open.
func gzipped(b *testing.B, raw []byte) func() (io.ReadCloser, error) {
	l, err := tarball.LayerFromOpener(opener(raw))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := l.Digest(); err != nil {
		b.Fatal(err)
	}
	return l.Uncompressed
}
