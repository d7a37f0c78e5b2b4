package nodesim

import (
	"archive/tar"
	"bytes"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// member is one tar entry of a test layer, written as given: the point of
// these layers is to hold what kiln's own writers never would.
type member struct {
	hdr  tar.Header
	data string
}

func reg(name, data string) member {
	return member{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data)), ModTime: built}, data: data}
}

func dir(name string) member {
	return member{hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: built}}
}

func hardlink(name, target string) member {
	return member{hdr: tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: target, ModTime: built}}
}

// layerOf writes the members in order, each header's Format as set (the
// zero Format lets archive/tar choose, as kiln's writers do).
func layerOf(t testing.TB, ms ...member) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range ms {
		h := m.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("writing %q: %v", h.Name, err)
		}
		if _, err := tw.Write([]byte(m.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return static.NewLayer(buf.Bytes(), types.OCILayer)
}

// derived appends layers to the base, as a build on it would.
func derived(t testing.TB, base v1.Image, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(base, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func mustBase(t testing.TB) v1.Image {
	t.Helper()
	b, err := Base()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
