package registry

import (
	"context"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
)

// TestNamedReadsAndWritesNeverReachAMirror: with the same tag holding
// different images on a source and its mirror, Head and Image answer with
// the mirror's (the mirror is tried first), while HeadNamed, ImageNamed,
// Write and Tag only ever talk to the named registry: kiln reads back what
// it pushed where it pushed it, and never pushes to a mirror.
func TestNamedReadsAndWritesNeverReachAMirror(t *testing.T) {
	ctx := context.Background()
	src, mirror := startRegistry(t), startRegistry(t)
	// Tag mirrors (not digest-only), as an ImageTagMirrorSet makes them.
	r := Remote{Config: &Config{Registries: sysregistriesv2.V2RegistriesConf{Registries: []sysregistriesv2.Registry{{
		Prefix: src.host() + "/ocp", Endpoint: sysregistriesv2.Endpoint{Location: src.host() + "/ocp"},
		Mirrors: []sysregistriesv2.Endpoint{{Location: mirror.host() + "/mirror"}},
	}}}}}
	push := func(ref string) v1.Image {
		t.Helper()
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(parseRef(t, ref), img); err != nil {
			t.Fatal(err)
		}
		return img
	}
	onMirror := mustDigest(t, push(mirror.host()+"/mirror/node:1"))
	onSource := mustDigest(t, push(src.host()+"/ocp/node:1"))
	ref := parseRef(t, src.host()+"/ocp/node:1")

	type call struct {
		name             string
		do               func() (v1.Hash, error)
		want             v1.Hash
		mirrorAsked, src bool
	}
	calls := []call{
		{"Head", func() (v1.Hash, error) {
			d, err := r.Head(ctx, ref)
			if err != nil {
				return v1.Hash{}, err
			}
			return d.Digest, nil
		}, onMirror, true, false},
		{"Image", func() (v1.Hash, error) {
			img, err := r.Image(ctx, ref)
			if err != nil {
				return v1.Hash{}, err
			}
			return img.Digest()
		}, onMirror, true, false},
		{"HeadNamed", func() (v1.Hash, error) {
			d, err := r.HeadNamed(ctx, ref)
			if err != nil {
				return v1.Hash{}, err
			}
			return d.Digest, nil
		}, onSource, false, true},
		{"ImageNamed", func() (v1.Hash, error) {
			img, err := r.ImageNamed(ctx, ref)
			if err != nil {
				return v1.Hash{}, err
			}
			return img.Digest()
		}, onSource, false, true},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			s0, m0 := src.requests.Load(), mirror.requests.Load()
			got, err := c.do()
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("%s of %s = %s, want %s", c.name, ref, got, c.want)
			}
			if asked := mirror.requests.Load() > m0; asked != c.mirrorAsked {
				t.Errorf("mirror asked: %v, want %v", asked, c.mirrorAsked)
			}
			if asked := src.requests.Load() > s0; asked != c.src {
				t.Errorf("source asked: %v, want %v", asked, c.src)
			}
		})
	}

	t.Run("Write and Tag", func(t *testing.T) {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		out := parseRef(t, src.host()+"/ocp/kiln-out:1")
		m0 := mirror.requests.Load()
		if err := r.Write(ctx, out, img); err != nil {
			t.Fatal(err)
		}
		if err := r.Tag(ctx, out.Context().Tag("2"), img); err != nil {
			t.Fatal(err)
		}
		if n := mirror.requests.Load() - m0; n != 0 {
			t.Errorf("the mirror got %d requests from a write", n)
		}
		d, err := r.HeadNamed(ctx, out.Context().Tag("2"))
		if err != nil {
			t.Fatal(err)
		}
		if d.Digest != mustDigest(t, img) {
			t.Errorf("tag 2 holds %s, want %s", d.Digest, mustDigest(t, img))
		}
	})
}

func mustDigest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
