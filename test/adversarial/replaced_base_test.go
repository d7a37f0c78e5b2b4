package adversarial

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/registry"
)

// moveOnRead moves a tag to another image right after the registry has
// answered the first read of it: the attacker wins the race between
// resolving the base and building on it.
type moveOnRead struct {
	next  http.RoundTripper
	path  string
	move  func() error
	once  sync.Once
	moved error
	fired bool
}

func (m *moveOnRead) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := m.next.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet && r.URL.Path == m.path {
		m.once.Do(func() { m.fired, m.moved = true, m.move() })
	}
	return resp, err
}

// TestBaseTagMovedAfterResolveIsNotBuiltOn: the base tag is moved to the
// attacker's image just after image-build resolved it. The image is built
// on the digest resolved once: its layers are that base's, its label and
// its attested Inputs name that digest, and nothing of the attacker's base
// is in it.
func TestBaseTagMovedAfterResolveIsNotBuiltOn(t *testing.T) {
	s := newNodeImageSite(t)
	resolved := s.tagDigestOf(t, s.base)
	evil, err := random.Image(4096, 3)
	if err != nil {
		t.Fatal(err)
	}
	hook := &moveOnRead{next: http.DefaultTransport, path: "/v2/base/os/manifests/1", move: func() error {
		return remote.Write(s.ref(t, s.base), evil)
	}}
	r := s.newRun(t, "worker", "hello")
	mc, err := imagebuild.ReadRendered(r.work + "/render/rendered.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := imagebuild.Build(context.Background(), registry.Remote{Insecure: []string{s.host}, Transport: hook},
		imagebuild.BuildInput{Base: s.base, Repository: s.repo, Pool: "worker", Rendered: mc, Identity: s.id})
	if err != nil {
		t.Fatal(err)
	}
	if !hook.fired || hook.moved != nil {
		t.Fatalf("the base tag was not moved during the build (fired %v, %v)", hook.fired, hook.moved)
	}
	if now := s.tagDigestOf(t, s.base); now == resolved {
		t.Fatal("the base tag still points at the resolved digest")
	}
	if !strings.HasSuffix(res.BaseRef, "@"+resolved) {
		t.Errorf("BaseRef %s, want the resolved %s", res.BaseRef, resolved)
	}
	var base string
	for _, d := range res.Inputs.Dependencies {
		if d.Name == "base-image" {
			base = d.Digest
		}
	}
	if base != resolved || !strings.HasSuffix(res.Inputs.Parameters["baseImage"], "@"+resolved) {
		t.Errorf("Inputs name base %s (%s), want %s", base, res.Inputs.Parameters["baseImage"], resolved)
	}
	built, err := remote.Image(s.ref(t, res.Ref))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := built.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Labels[imagebuild.LabelBaseImage]; got != res.BaseRef {
		t.Errorf("label %s = %q, want %q", imagebuild.LabelBaseImage, got, res.BaseRef)
	}
	want, err := remote.Image(s.ref(t, s.host+"/base/os@"+resolved))
	if err != nil {
		t.Fatal(err)
	}
	evilLayers, _ := evil.Layers()
	wantLayers, _ := want.Layers()
	gotLayers, _ := built.Layers()
	if len(gotLayers) != len(wantLayers)+1 {
		t.Fatalf("%d layers, want the resolved base's %d plus kiln's", len(gotLayers), len(wantLayers))
	}
	for i, l := range wantLayers {
		wd, _ := l.Digest()
		gd, _ := gotLayers[i].Digest()
		if wd != gd {
			t.Errorf("layer %d is %s, want the resolved base's %s", i, gd, wd)
		}
	}
	for _, l := range evilLayers {
		ed, _ := l.Digest()
		for _, g := range gotLayers {
			if gd, _ := g.Digest(); gd == ed {
				t.Errorf("the attacker's base layer %s is in the image", ed)
			}
		}
	}
}
