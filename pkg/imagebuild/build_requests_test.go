package imagebuild

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// requestLog records each request as its kind: method, repository and
// what is asked for (manifest, blob, mount, upload), without digests.
type requestLog struct {
	mu   sync.Mutex
	next http.RoundTripper
	kind map[string]int
}

var v2Path = regexp.MustCompile(`^/v2/(.+)/(manifests|blobs/uploads|blobs)/?(.*)$`)

func (l *requestLog) RoundTrip(r *http.Request) (*http.Response, error) {
	k := r.Method + " " + r.URL.Scheme + " " + r.URL.Path
	if m := v2Path.FindStringSubmatch(r.URL.Path); m != nil {
		what := m[2]
		switch {
		case what == "blobs/uploads" && r.URL.Query().Has("mount"):
			what = "mount from " + r.URL.Query().Get("from")
		case what == "blobs/uploads" && m[3] != "":
			what = "upload data"
		case what == "blobs/uploads":
			what = "upload start"
		case what == "manifests" && strings.HasPrefix(m[3], TagPrefix):
			what = "manifest at fingerprint tag"
		}
		k = fmt.Sprintf("%s %s %s", r.Method, m[1], what)
	}
	l.mu.Lock()
	l.kind[k]++
	l.mu.Unlock()
	return l.next.RoundTrip(r)
}

// TestBuildFastPathRequestsAreTheFloor counts what a fast-path build of
// an N-layer base sends: one ping, the base's manifest and config, the
// fingerprint tag's HEAD (the reuse decision), one mount per base layer
// with no HEAD before it, one GET per base layer (the node import check
// reads the whole image before anything is pushed), one POST and one PUT
// for the new layer and for the config, and one manifest PUT, at the tag.
func TestBuildFastPathRequestsAreTheFloor(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	for _, layers := range []int64{2, 5} {
		t.Run(fmt.Sprintf("layers=%d", layers), func(t *testing.T) {
			base := fmt.Sprintf("base/os%d:1", layers)
			imagetest.PushBase(t, reg.Host, base, layers)
			log := &requestLog{next: http.DefaultTransport, kind: map[string]int{}}
			r := registry.Remote{Insecure: []string{reg.Host}, Transport: log}
			repo := fmt.Sprintf("kiln/os%d", layers)
			if _, err := Build(context.Background(), r, testInput(t, reg.Host, base, repo, "hello\n")); err != nil {
				t.Fatal(err)
			}
			baseRepo, _, _ := strings.Cut(base, ":")
			want := map[string]int{
				// The registry is insecure: go-containerregistry's first ping
				// tries TLS beside plain HTTP; later calls ask neither.
				"GET https /v2/":                                1,
				"GET http /v2/":                                 1,
				"GET " + baseRepo + " manifests":                1,
				"GET " + baseRepo + " blobs":                    1 + int(layers), // the config, each layer for the node check
				"HEAD " + repo + " manifest at fingerprint tag": 1,
				"POST " + repo + " mount from " + baseRepo:      int(layers),
				"POST " + repo + " upload start":                2, // layer, config
				"PUT " + repo + " upload data":                  2,
				"PUT " + repo + " manifest at fingerprint tag":  1,
			}
			if !maps.Equal(log.kind, want) {
				t.Errorf("requests of a fast-path build on %d layers:\n got %s\nwant %s", layers, show(log.kind), show(want))
			}
		})
	}
}

func show(m map[string]int) string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		lines = append(lines, fmt.Sprintf("%dx %s", m[k], k))
	}
	return strings.Join(lines, "; ")
}

// heldReuseHead holds the fingerprint tag's HEAD until the base's config
// has been asked for, failing the HEAD after a timeout.
type heldReuseHead struct {
	next   http.RoundTripper
	config string // the base config's blob path
	asked  chan struct{}
	once   sync.Once
}

func (h *heldReuseHead) RoundTrip(r *http.Request) (*http.Response, error) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == h.config:
		h.once.Do(func() { close(h.asked) })
	case r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/"+TagPrefix):
		select {
		case <-h.asked:
		case <-time.After(5 * time.Second):
			return nil, fmt.Errorf("the base's config was not asked for while the reuse decision waited")
		}
	}
	return h.next.RoundTrip(r)
}

// TestBuildReadsTheBaseConfigWhileDecidingReuse holds the reuse decision's
// HEAD until the base's config is asked for: a build that reads the config
// only after the decision never gets there and fails; the build must
// push the same image as one sent through an unhindered transport.
func TestBuildReadsTheBaseConfigWhileDecidingReuse(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	imagetest.PushBase(t, reg.Host, "base/os:1", 2)
	base, err := remote.Image(imagetest.MustRef(t, reg.Host+"/base/os:1"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := base.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	hold := &heldReuseHead{next: http.DefaultTransport, config: "/v2/base/os/blobs/" + cfg.String(), asked: make(chan struct{})}
	in := testInput(t, reg.Host, "base/os:1", "kiln/held", "hello\n")
	got, err := Build(context.Background(), registry.Remote{Insecure: []string{reg.Host}, Transport: hold, Backoff: remote.Backoff{Steps: 1}}, in)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Build(context.Background(), registry.Remote{Insecure: []string{reg.Host}}, testInput(t, reg.Host, "base/os:1", "kiln/free", "hello\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != want.Digest || got.Reused || want.Reused {
		t.Errorf("held build %s (reused %v), unhindered build %s (reused %v): want the same new image", got.Digest, got.Reused, want.Digest, want.Reused)
	}
}
