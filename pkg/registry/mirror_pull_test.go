package registry

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// countingRegistry is go-containerregistry's in-process registry behind a
// handler that counts every request it receives.
type countingRegistry struct {
	*httptest.Server
	requests atomic.Int64
}

func startRegistry(t *testing.T) *countingRegistry {
	t.Helper()
	r := &countingRegistry{}
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *countingRegistry) host() string { return strings.TrimPrefix(r.URL, "http://") }

// TestPullThroughMirror pulls an image by digest from a mirror named by an
// ImageDigestMirrorSet through Remote.Image, the way every kiln pull goes.
func TestPullThroughMirror(t *testing.T) {
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	setup := func(t *testing.T, policy configv1.MirrorSourcePolicy) (source, mirror *countingRegistry, cfg *Config) {
		source, mirror = startRegistry(t), startRegistry(t)
		// The mirror holds the image under another repository, as oc-mirror lays it out.
		if err := remote.Write(parseRef(t, mirror.host()+"/mirrored/ocp/release:copy"), img); err != nil {
			t.Fatal(err)
		}
		cfg, err := FromCluster(ClusterInputs{IDMS: []configv1.ImageDigestMirrorSet{{
			ObjectMeta: metav1.ObjectMeta{Name: "release"},
			Spec: configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: []configv1.ImageDigestMirrors{{
				Source: source.host() + "/ocp", Mirrors: []configv1.ImageMirror{configv1.ImageMirror(mirror.host() + "/mirrored/ocp")}, MirrorSourcePolicy: policy,
			}}},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		source.requests.Store(0)
		mirror.requests.Store(0)
		return source, mirror, cfg
	}
	pull := func(t *testing.T, cfg *Config, ref string) error {
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Remote{Config: cfg, Backoff: remote.Backoff{Steps: 1}}.Image(context.Background(), r)
		if err != nil {
			return err
		}
		d, err := got.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if d != digest {
			t.Fatalf("pulled %s, want %s", d, digest)
		}
		// Reading the layers goes through the same source.
		layers, err := got.Layers()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range layers {
			rc, err := l.Compressed()
			if err != nil {
				t.Fatal(err)
			}
			rc.Close()
		}
		return nil
	}

	t.Run("source registry down", func(t *testing.T) {
		source, mirror, cfg := setup(t, "")
		ref := source.host() + "/ocp/release@" + digest.String()
		source.Close()
		if err := pull(t, cfg, ref); err != nil {
			t.Fatal(err)
		}
		if mirror.requests.Load() == 0 {
			t.Fatal("the mirror got no request")
		}
	})

	t.Run("NeverContactSource", func(t *testing.T) {
		source, mirror, cfg := setup(t, configv1.NeverContactSource)
		if err := pull(t, cfg, source.host()+"/ocp/release@"+digest.String()); err != nil {
			t.Fatal(err)
		}
		// A digest the mirror lacks fails on the mirror, never falling back.
		other := "sha256:" + strings.Repeat("0", 64)
		err := pull(t, cfg, source.host()+"/ocp/release@"+other)
		if err == nil || !strings.Contains(err.Error(), mirror.host()) {
			t.Fatalf("error %v, want the mirror's", err)
		}
		// Tags have no digest mirror and the source is blocked.
		if err := pull(t, cfg, source.host()+"/ocp/release:latest"); err == nil || !strings.Contains(err.Error(), "every source is blocked") {
			t.Fatalf("error %v, want every source blocked", err)
		}
		if n := source.requests.Load(); n != 0 {
			t.Fatalf("the source registry got %d requests", n)
		}
		if mirror.requests.Load() == 0 {
			t.Fatal("the mirror got no request")
		}
	})

	t.Run("AllowContactingSource falls back to the source", func(t *testing.T) {
		source, mirror, cfg := setup(t, "")
		if err := remote.Write(parseRef(t, source.host()+"/ocp/tool:v1"), img); err != nil {
			t.Fatal(err)
		}
		source.requests.Store(0)
		// The mirror does not have ocp/tool: it is asked, then the source.
		if err := pull(t, cfg, source.host()+"/ocp/tool@"+digest.String()); err != nil {
			t.Fatal(err)
		}
		if mirror.requests.Load() == 0 || source.requests.Load() == 0 {
			t.Fatalf("mirror %d and source %d requests: want both asked", mirror.requests.Load(), source.requests.Load())
		}
	})
}
