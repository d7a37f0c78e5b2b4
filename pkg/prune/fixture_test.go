package prune

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/retention"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// fixture is a docker-registry (deletes enabled) holding kiln's
// repository kiln/os and a base image in base/os.
type fixture struct {
	reg  *env.Registry
	r    registry.Remote
	key  imagetest.CosignKey
	v    signature.Verifier
	repo string
	base v1.Image
	// baseRef is the base image by digest.
	baseRef string
}

func newFixture(t *testing.T, reg *env.Registry) *fixture {
	t.Helper()
	f := newFixtureAt(t, reg.Host)
	f.reg = reg
	return f
}

// newFixtureAt is a fixture in the registry at host (no garbage collection).
func newFixtureAt(t *testing.T, host string) *fixture {
	t.Helper()
	f := &fixture{r: registry.Remote{Insecure: []string{host}}, key: imagetest.NewCosignKey(t), repo: host + "/kiln/os"}
	v, err := sign.LoadVerifier(f.key.PubPath)
	if err != nil {
		t.Fatal(err)
	}
	f.v = v
	if f.base, err = random.Image(8<<10, 2); err != nil {
		t.Fatal(err)
	}
	f.baseRef = f.push(t, host+"/base/os:v1", f.base)
	return f
}

// push writes img at ref (a tag) and returns it by digest.
func (f *fixture) push(t *testing.T, ref string, img v1.Image) string {
	t.Helper()
	tag, err := f.r.ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.r.Write(context.Background(), tag, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return tag.Context().Digest(d.String()).String()
}

// nodeInputs are a node image's inputs for rendered config n, built on
// the base with the kmod images kmods.
func (f *fixture) nodeInputs(t *testing.T, n string, kmods ...string) trust.Inputs {
	t.Helper()
	in, err := trust.NodeImage{Pool: "worker", RenderedName: "rendered-worker-" + n, RenderedHash: "sha256:" + strings.Repeat("b", 64),
		BaseImage: f.baseRef, KmodDigests: kmods, Source: "https://github.com/kiln-dev/kiln", Builder: "fast"}.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// node pushes a node image (the base and one layer of its own) at its
// kiln-<fingerprint> tag, and extra tags, signed and attested by key
// (kiln's unless another is given). It returns the image by digest.
func (f *fixture) node(t *testing.T, in trust.Inputs, key *imagetest.CosignKey, extra ...string) string {
	t.Helper()
	layer, err := random.Layer(16<<10, "application/vnd.oci.image.layer.v1.tar+gzip")
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(f.base, layer)
	if err != nil {
		t.Fatal(err)
	}
	ref := ""
	for _, tag := range append([]string{retention.TagPrefix + in.Fingerprint()}, extra...) {
		ref = f.push(t, f.repo+":"+tag, img)
	}
	if key == nil {
		key = &f.key
	}
	key.Sign(t, f.r, ref, in)
	return ref
}

// digest is the sha256:<hex> of a repo@digest reference.
func digest(ref string) string {
	_, d, _ := strings.Cut(ref, "@")
	return d
}

// tags lists kiln's repository.
func (f *fixture) tags(t *testing.T) []string {
	t.Helper()
	repo, err := f.r.ParseRepo(f.repo)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := f.r.ListTags(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(tags)
	return tags
}

// pullsAndVerifies reads every blob of ref and checks its signature and
// attestation with v.
func (f *fixture) pullsAndVerifies(t *testing.T, ref string, v signature.Verifier) {
	t.Helper()
	ctx := context.Background()
	d, err := f.r.ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := f.r.ImageNamed(ctx, d)
	if err != nil {
		t.Errorf("pulling %s: %v", ref, err)
		return
	}
	if _, err := img.RawConfigFile(); err != nil {
		t.Errorf("pulling the config of %s: %v", ref, err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err == nil {
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
		}
		if err != nil {
			t.Errorf("pulling a layer of %s: %v", ref, err)
		}
	}
	if v != nil {
		if err := sign.CosignVerify(ctx, f.r, ref, v); err != nil {
			t.Errorf("verifying %s: %v", ref, err)
		}
	}
}

// gone asserts ref is no longer in the registry.
func (f *fixture) gone(t *testing.T, ref string) {
	t.Helper()
	d, err := f.r.ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.r.HeadNamed(context.Background(), d)
	if !errors.Is(registry.Classify(err, "reading", ref), registry.ErrNotFound) {
		t.Errorf("%s: HEAD = %v, want not found", ref, err)
	}
}

func (f *fixture) config(cluster func(context.Context) (retention.Cluster, error)) Config {
	return Config{Remote: f.r, Verifier: f.v, Repos: []string{f.repo}, PerPool: retention.DefaultPerPool, Cluster: cluster}
}

func artifactTags(ref string) []string {
	h := strings.TrimPrefix(digest(ref), "sha256:")
	return []string{"sha256-" + h + ".att", "sha256-" + h + ".sig"}
}

func mustDigest(t *testing.T, f *fixture, ref string) name.Digest {
	t.Helper()
	r, err := f.r.ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := r.(name.Digest)
	if !ok {
		t.Fatalf("%s is not by digest", ref)
	}
	return d
}
