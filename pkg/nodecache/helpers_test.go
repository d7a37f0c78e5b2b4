package nodecache

import (
	"archive/tar"
	"bytes"
	"io"
	"sync/atomic"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// file is one tar entry of a test layer: a regular file unless typ says
// otherwise (link is a symlink's or hard link's target).
type file struct {
	name, body, link string
	typ              byte
}

func layerOf(t testing.TB, files ...file) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Typeflag: f.typ, Linkname: f.link, Mode: 0o644}
		if f.typ == 0 {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.body))
		}
		if f.typ == tar.TypeDir {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// counted counts the reads of a layer's content.
type counted struct {
	v1.Layer
	reads *atomic.Int64
}

func (c counted) Uncompressed() (io.ReadCloser, error) {
	c.reads.Add(1)
	return c.Layer.Uncompressed()
}

func (c counted) Compressed() (io.ReadCloser, error) {
	c.reads.Add(1)
	return c.Layer.Compressed()
}

// imageOf stacks layers into an image.
func imageOf(t testing.TB, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func kernelFile(kver string) file {
	return file{name: "usr/lib/modules/" + kver + "/vmlinuz", body: "kernel " + kver}
}
