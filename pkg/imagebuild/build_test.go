package imagebuild

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// countingTransport records every request that reaches the registry.
type countingTransport struct {
	mu   sync.Mutex
	reqs []string
	next http.RoundTripper
	// fail, when it returns true for a request, answers it with an error
	// instead of sending it.
	fail func(*http.Request) bool
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	if c.fail != nil && c.fail(r) {
		return nil, errors.New("injected failure")
	}
	return c.next.RoundTrip(r)
}

func (c *countingTransport) matching(method, substr string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range c.reqs {
		if strings.HasPrefix(r, method+" ") && strings.Contains(r, substr) {
			out = append(out, r)
		}
	}
	return out
}

func testInput(t testing.TB, host, base, repo, motd string) BuildInput {
	return BuildInput{Base: host + "/" + base, Repository: host + "/" + repo, Pool: "worker",
		Rendered: imagetest.RenderedMC(t, "rendered-worker-0123", imagetest.SampleConfig(t, motd)), KmodDigests: []string{"sha256:" + strings.Repeat("a", 64)}}
}

func TestBuildFastPath(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := context.Background()
	base := imagetest.PushBase(t, reg.Host, "base/os:4.18", 3)
	ct := &countingTransport{next: http.DefaultTransport}
	r := registry.Remote{Insecure: []string{reg.Host}, Transport: ct}

	res, err := Build(ctx, r, testInput(t, reg.Host, "base/os:4.18", "kiln/os", "hello\n"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Reused || !strings.HasPrefix(res.Ref, reg.Host+"/kiln/os@sha256:") {
		t.Fatalf("result %+v", res)
	}
	// Base layers were mounted, never uploaded; each was read once, by
	// the node import check of the whole image before the push.
	baseLayers, _ := base.Layers()
	for _, l := range baseLayers {
		d, _ := l.Digest()
		if got := ct.matching("GET", "/blobs/"+d.String()); len(got) != 1 {
			t.Errorf("base layer %s was read %d times, want once (the node check): %v", d, len(got), got)
		}
	}
	if mounts := ct.matching("POST", "/v2/kiln/os/blobs/uploads/"); len(mounts) < len(baseLayers) {
		t.Errorf("expected a mount POST per base layer, saw %v", mounts)
	}

	ref, _ := name.ParseReference(res.Ref, name.Insecure)
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	for k, want := range map[string]string{
		LabelFingerprint: res.Fingerprint, LabelRenderedConfig: "rendered-worker-0123", LabelPool: "worker",
		LabelBaseImage: res.BaseRef, imagetest.VersionLabel: "9.6.20250101-0",
	} {
		if got := cf.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	last := cf.History[len(cf.History)-1].CreatedBy
	if !strings.HasPrefix(last, "kiln: rendered-worker-0123") {
		t.Errorf("history: %q", last)
	}
	m, _ := img.Manifest()
	if m.Annotations[AnnotationSource] != DefaultSource {
		t.Errorf("annotations: %v", m.Annotations)
	}
	layers, _ := img.Layers()
	if len(layers) != len(baseLayers)+1 {
		t.Fatalf("layers: %d", len(layers))
	}
	files := imagetest.LayerFiles(t, layers[len(layers)-1])
	if files["etc/motd"] != "hello\n" || files["etc/kubernetes/kubelet.conf"] != "kind: KubeletConfiguration\n" {
		t.Errorf("layer files: %v", files)
	}
	if !strings.Contains(files["etc/machine-config-daemon/currentconfig"], `"name":"rendered-worker-0123"`) {
		t.Errorf("currentconfig: %q", files["etc/machine-config-daemon/currentconfig"])
	}
	if _, err := remote.Head(ref.Context().Tag(res.Tag)); err != nil {
		t.Errorf("fingerprint tag %s: %v", res.Tag, err)
	}

	// Same inputs, no identity configured: nothing is proven, nothing
	// reused, and the result says why.
	noID, err := Build(ctx, r, testInput(t, reg.Host, "base/os:4.18", "kiln/os", "hello\n"))
	if err != nil {
		t.Fatal(err)
	}
	if noID.Reused || noID.Digest != res.Digest || !strings.Contains(noID.Rejected, "no signing identity configured") {
		t.Errorf("build without identity: reused=%v digest %s rejected %q, want a rebuild of %s saying no identity", noID.Reused, noID.Digest, noID.Rejected, res.Digest)
	}

	// Same inputs, signed and attested by the configured key: reused,
	// nothing pushed.
	key := imagetest.NewCosignKey(t)
	key.Sign(t, r, res.Ref, res.Inputs)
	ct.reqs = nil
	in := testInput(t, reg.Host, "base/os:4.18", "kiln/os", "hello\n")
	in.Identity = key.ID
	again, err := Build(ctx, r, in)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Reused || again.Digest != res.Digest || again.Rejected != "" {
		t.Errorf("second build: reused=%v digest %s rejected %q, want reuse of %s", again.Reused, again.Digest, again.Rejected, res.Digest)
	}
	if puts := append(append(ct.matching("PUT", "/"), ct.matching("POST", "/")...), ct.matching("DELETE", "/")...); len(puts) > 0 {
		t.Errorf("reuse wrote to the registry: %v", puts)
	}

	// Identical inputs into another repository (no reuse possible): the same
	// digest, bit for bit.
	other, err := Build(ctx, r, testInput(t, reg.Host, "base/os:4.18", "kiln/other", "hello\n"))
	if err != nil {
		t.Fatal(err)
	}
	if other.Reused || other.Digest != res.Digest {
		t.Errorf("fresh build elsewhere: reused=%v digest %s, want %s", other.Reused, other.Digest, res.Digest)
	}
	// A config change gives another image.
	changed, err := Build(ctx, r, testInput(t, reg.Host, "base/os:4.18", "kiln/os", "changed\n"))
	if err != nil {
		t.Fatal(err)
	}
	if changed.Digest == res.Digest || changed.Fingerprint == res.Fingerprint {
		t.Error("a config change kept the digest")
	}
}

// multiPlatforms are the platforms of pushMultiPlatformBase's index, in
// its order.
var multiPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// pushMultiPlatformBase writes base/multi:1 to reg: an index of two
// random images with a kernel each, one per multiPlatforms.
func pushMultiPlatformBase(t *testing.T, reg *env.Registry) {
	t.Helper()
	idx, err := random.Index(32<<10, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	// random.Index has no platforms; give each child one.
	im, _ := idx.IndexManifest()
	withPlat := mutate.IndexMediaType(emptyIndex(), types.OCIImageIndex)
	for i, d := range im.Manifests {
		img, _ := idx.Image(d.Digest)
		withPlat = mutate.AppendManifests(withPlat, mutate.IndexAddendum{Add: env.WithKernel(t, img), Descriptor: v1.Descriptor{Platform: &multiPlatforms[i]}})
	}
	ref, _ := name.ParseReference(reg.Host+"/base/multi:1", name.Insecure)
	if err := remote.WriteIndex(ref, withPlat); err != nil {
		t.Fatal(err)
	}
}

func TestBuildIndex(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	pushMultiPlatformBase(t, reg)
	res, err := Build(context.Background(), registry.Remote{Insecure: []string{reg.Host}}, testInput(t, reg.Host, "base/multi:1", "kiln/multi", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Platforms) != 2 {
		t.Fatalf("platforms: %v", res.Platforms)
	}
	got, err := remote.Index(imagetest.MustRef(t, res.Ref))
	if err != nil {
		t.Fatal(err)
	}
	gm, _ := got.IndexManifest()
	for i, d := range gm.Manifests {
		if d.Platform == nil || d.Platform.Architecture != multiPlatforms[i].Architecture {
			t.Errorf("child %d platform %v", i, d.Platform)
		}
		img, _ := got.Image(d.Digest)
		cf, _ := img.ConfigFile()
		if cf.Config.Labels[LabelFingerprint] != res.Fingerprint {
			t.Errorf("child %d lacks the fingerprint label", i)
		}
	}
}

func TestBuildFailures(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	imagetest.PushBase(t, reg.Host, "base/os:1", 1)
	ctx := context.Background()
	fast := remote.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Steps: 3}

	t.Run("missing base is named", func(t *testing.T) {
		_, err := Build(ctx, registry.Remote{Insecure: []string{reg.Host}, Backoff: fast}, testInput(t, reg.Host, "base/nope:1", "kiln/os", "x"))
		if !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), reg.Host+"/base/nope:1") {
			t.Fatalf("error %v: want registry.ErrNotFound naming the base", err)
		}
	})
	t.Run("unreachable registry", func(t *testing.T) {
		ct := &countingTransport{next: http.DefaultTransport}
		start := time.Now()
		_, err := Build(ctx, registry.Remote{Insecure: []string{"127.0.0.1:1"}, Backoff: fast, Transport: ct}, testInput(t, "127.0.0.1:1", "base/os:1", "kiln/os", "x"))
		if !errors.Is(err, registry.ErrUnreachable) {
			t.Fatalf("error %v: want registry.ErrUnreachable", err)
		}
		if n := len(ct.matching("GET", "/v2/")); n < 2 || n > 6 {
			t.Errorf("attempts: %d, want bounded retries (%v)", n, ct.reqs)
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("took %v", time.Since(start))
		}
	})
	t.Run("failed push leaves no tag", func(t *testing.T) {
		ct := &countingTransport{next: http.DefaultTransport, fail: func(r *http.Request) bool {
			return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/")
		}}
		in := testInput(t, reg.Host, "base/os:1", "kiln/partial", "x")
		res, err := Build(ctx, registry.Remote{Insecure: []string{reg.Host}, Backoff: fast, Transport: ct}, in)
		if err == nil {
			t.Fatalf("push with failing manifest PUT succeeded: %+v", res)
		}
		tags, err := remote.List(imagetest.MustRef(t, reg.Host+"/kiln/partial:x").Context())
		if err == nil && len(tags) > 0 {
			t.Errorf("tags left behind: %v", tags)
		}
	})
	t.Run("foreign image at the tag is replaced by kiln's build", func(t *testing.T) {
		r := registry.Remote{Insecure: []string{reg.Host}, Backoff: fast}
		in := testInput(t, reg.Host, "base/os:1", "kiln/squat", "x")
		first, err := Build(ctx, r, in)
		if err != nil {
			t.Fatal(err)
		}
		squatter, _ := random.Image(10, 1)
		tag := imagetest.MustRef(t, reg.Host+"/kiln/squat:"+first.Tag)
		if err := remote.Write(tag, squatter); err != nil {
			t.Fatal(err)
		}
		sd, _ := squatter.Digest()
		again, err := Build(ctx, r, in)
		if err != nil {
			t.Fatal(err)
		}
		if again.Reused || again.Digest != first.Digest || !strings.Contains(again.Rejected, "holds "+sd.String()) {
			t.Fatalf("rebuild over a squatted tag: %+v, want kiln's %s and a rejection naming %s", again, first.Digest, sd)
		}
		if d, err := remote.Head(tag); err != nil || d.Digest != first.Digest {
			t.Errorf("tag %s holds %v (%v), want kiln's %s", first.Tag, d, err, first.Digest)
		}
	})
	t.Run("needs buildah", func(t *testing.T) {
		in := testInput(t, reg.Host, "base/os:1", "kiln/os", "x")
		in.Rendered.Spec.Extensions = []string{"usbguard"}
		if _, err := Build(ctx, registry.Remote{Insecure: []string{reg.Host}}, in); !errors.Is(err, ErrNeedsBuildah) {
			t.Fatalf("error %v: want ErrNeedsBuildah", err)
		}
	})
}

func TestBuildAuthFailure(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{TLS: true, Users: map[string]string{"kiln": "s3cret"}})
	ctx := context.Background()
	dir := t.TempDir()
	authFile := writeAuth(t, dir, reg.Host, "kiln", "wrong-password")
	r := registry.Remote{AuthFile: authFile, Transport: reg.Transport(), Backoff: remote.Backoff{Duration: time.Millisecond, Steps: 1}}
	_, err := Build(ctx, r, testInput(t, reg.Host, "base/os:1", "kiln/os", "x"))
	if !errors.Is(err, registry.ErrAuth) || errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("error %v: want registry.ErrAuth, not not-found", err)
	}
	if strings.Contains(err.Error(), "wrong-password") {
		t.Fatal("error leaks the password")
	}
	// No credentials at all: still an auth failure, not "not found".
	r.AuthFile = ""
	if _, err := Build(ctx, r, testInput(t, reg.Host, "base/os:1", "kiln/os", "x")); !errors.Is(err, registry.ErrAuth) || errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("anonymous: error %v: want registry.ErrAuth", err)
	}
	// Right credentials: the same missing base is now "not found".
	r.AuthFile = writeAuth(t, dir, reg.Host, "kiln", "s3cret")
	if _, err := Build(ctx, r, testInput(t, reg.Host, "base/os:1", "kiln/os", "x")); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("error %v: want registry.ErrNotFound with good credentials", err)
	}
}
