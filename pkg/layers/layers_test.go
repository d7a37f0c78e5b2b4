package layers

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// entry is one tar entry, in the order given: a name ending in "/" is a
// folder, one with "->" a symlink, anything else a file of that content.
type entry struct{ name, data string }

func layer(t *testing.T, es ...entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(e.data))}
		switch {
		case strings.HasSuffix(e.name, "/"):
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		case strings.Contains(e.name, "->"):
			n, to, _ := strings.Cut(e.name, "->")
			h.Name, h.Linkname, h.Typeflag, h.Size = n, to, tar.TypeSymlink, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.data); err != nil && h.Size > 0 {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func image(t *testing.T, ls ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, ls...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// flat is the flattened filesystem: path → content ("/" for a folder,
// "->target" for a link).
func flat(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := Walk(img, func(name string, h *tar.Header, r io.Reader) error {
		switch h.Typeflag {
		case tar.TypeDir:
			out[name] = "/"
		case tar.TypeSymlink:
			out[name] = "->" + h.Linkname
		default:
			b, err := io.ReadAll(r)
			out[name] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWalk: each layer's entries replace and white out those of the
// layers below, as an overlay mount of the image shows them.
func TestWalk(t *testing.T) {
	base := layer(t, entry{"dir/", ""}, entry{"dir/a", "a"}, entry{"dir/sub/", ""}, entry{"dir/sub/c", "c"}, entry{"keep", "k"})
	for _, tc := range []struct {
		name  string
		upper []entry
		want  map[string]string
	}{{
		name:  "an opaque folder keeps only its own layer's content",
		upper: []entry{{"dir/.wh..wh..opq", ""}, {"dir/b", "b"}},
		want:  map[string]string{"dir": "/", "dir/b": "b", "keep": "k"},
	}, {
		name:  "an opaque marker after the layer's own file in tar order keeps that file",
		upper: []entry{{"dir/b", "b"}, {"dir/.wh..wh..opq", ""}},
		want:  map[string]string{"dir": "/", "dir/b": "b", "keep": "k"},
	}, {
		name:  "a plain whiteout deletes one file",
		upper: []entry{{"dir/.wh.a", ""}},
		want:  map[string]string{"dir": "/", "dir/sub": "/", "dir/sub/c": "c", "keep": "k"},
	}, {
		name:  "a whiteout of a folder deletes its tree",
		upper: []entry{{"dir/.wh.sub", ""}},
		want:  map[string]string{"dir": "/", "dir/a": "a", "keep": "k"},
	}, {
		name:  "a whiteout then the same name in its layer brings a new file",
		upper: []entry{{"./.wh.dir", ""}, {"./dir", "file now"}},
		want:  map[string]string{"dir": "file now", "keep": "k"},
	}, {
		name:  "an opaque root keeps only the top layer",
		upper: []entry{{".wh..wh..opq", ""}, {"new", "n"}},
		want:  map[string]string{"new": "n"},
	}, {
		name:  "a file replaces a lower file, a link replaces a lower folder",
		upper: []entry{{"/keep", "k2"}, {"dir/sub->/elsewhere", ""}},
		want:  map[string]string{"dir": "/", "dir/a": "a", "dir/sub": "->/elsewhere", "keep": "k2"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := flat(t, image(t, base, layer(t, tc.upper...)))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("flattened (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWalkStopsAtTheLayerHoldingTheFile: ErrStop ends the walk without
// an error, and the layers below are never opened.
func TestWalkStopsAtTheLayerHoldingTheFile(t *testing.T) {
	img := image(t, brokenLayer{layer(t, entry{"x", "below"})}, layer(t, entry{"x", "top"}))
	var got string
	err := Walk(img, func(name string, _ *tar.Header, r io.Reader) error {
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		got = name + "=" + string(b)
		return ErrStop
	})
	if err != nil || got != "x=top" {
		t.Errorf("Walk = %v, found %q; want nil, x=top", err, got)
	}
}

// TestWalkRefusesClimbingNames: an entry with `..` is an error naming it.
func TestWalkRefusesClimbingNames(t *testing.T) {
	img := image(t, layer(t, entry{"a/../../etc/shadow", "x"}))
	err := Walk(img, func(string, *tar.Header, io.Reader) error { return nil })
	want := `reading layer 0: tar entry "a/../../etc/shadow": a path with ` + "`..`" + ` is not allowed in a layer`
	if err == nil || err.Error() != want {
		t.Errorf("Walk = %v, want %s", err, want)
	}
}

// brokenLayer fails when read, so a test can tell it was never read.
type brokenLayer struct{ v1.Layer }

func (brokenLayer) Uncompressed() (io.ReadCloser, error) {
	return nil, errors.New("read the layer below")
}

// FuzzClean: a cleaned name is a plain relative path inside the root, or
// the name is refused.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"./usr/lib/", "/etc//x", "a/../b", "..", ".", "", "dir/.wh..wh..opq"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		p, err := Clean(name)
		if err != nil {
			return
		}
		if p == "" {
			return
		}
		if strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." || slices.Contains(strings.Split(p, "/"), "..") {
			t.Fatalf("Clean(%q) = %q: not a plain relative path", name, p)
		}
	})
}

// FuzzWalk: any layer bytes give an error or a walk whose names are
// clean, never a panic, and never a whiteout marker passed on.
func FuzzWalk(f *testing.F) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range []string{"dir/", "dir/.wh..wh..opq", "dir/b", ".wh.x", "./a/../b"} {
		_ = tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644})
	}
	_ = tw.Close()
	f.Add(buf.Bytes(), []byte{})
	f.Fuzz(func(t *testing.T, lower, upper []byte) {
		var ls []v1.Layer
		for _, b := range [][]byte{lower, upper} {
			l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithCompressedCaching)
			if err != nil {
				return
			}
			ls = append(ls, l)
		}
		img, err := mutate.AppendLayers(empty.Image, ls...)
		if err != nil {
			return
		}
		_ = Walk(img, func(name string, _ *tar.Header, _ io.Reader) error {
			if c, err := Clean(name); err != nil || c != name || strings.HasPrefix(path.Base(name), WhiteoutPrefix) {
				t.Fatalf("Walk passed %q", name)
			}
			return nil
		})
	})
}
