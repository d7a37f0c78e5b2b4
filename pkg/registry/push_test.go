package registry

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// loggingRegistry is go-containerregistry's in-process registry (which
// refuses mounts: it answers 202 and an upload location) behind a handler
// that records each request as "METHOD path" and may rewrite answers.
type loggingRegistry struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []string
	// digest, when set, replaces the Docker-Content-Digest of manifest PUTs.
	digest string
	// mountStatus, when set, answers every mount request with this status
	// and a distribution error.
	mountStatus int
}

func startLoggingRegistry(t *testing.T) *loggingRegistry {
	t.Helper()
	r := &loggingRegistry{}
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.reqs = append(r.reqs, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
		r.mu.Unlock()
		if r.mountStatus != 0 && req.URL.Query().Has("mount") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(r.mountStatus)
			_, _ = w.Write([]byte(`{"errors":[{"code":"DENIED","message":"mount refused"}]}`))
			return
		}
		if r.digest != "" && req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/manifests/") {
			w = digestRewriter{w, r.digest}
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

type digestRewriter struct {
	http.ResponseWriter
	digest string
}

func (d digestRewriter) WriteHeader(code int) {
	d.Header().Set("Docker-Content-Digest", d.digest)
	d.ResponseWriter.WriteHeader(code)
}

func (r *loggingRegistry) host() string { return strings.TrimPrefix(r.URL, "http://") }

func (r *loggingRegistry) mountRequests() int { return r.count("POST", "mount=") }

func (r *loggingRegistry) count(method, substr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, q := range r.reqs {
		if strings.HasPrefix(q, method+" ") && strings.Contains(q, substr) {
			n++
		}
	}
	return n
}

// layered is base (read from its registry, so its layers are mountable)
// with one random layer appended.
func layered(t *testing.T, base name.Reference) v1.Image {
	t.Helper()
	img, err := remote.Image(base)
	if err != nil {
		t.Fatal(err)
	}
	l, err := random.Layer(256, "application/vnd.docker.image.rootfs.diff.tar.gzip")
	if err != nil {
		t.Fatal(err)
	}
	out, err := mutate.AppendLayers(img, l)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func pushedBase(t *testing.T, ref string, layers int64) name.Reference {
	t.Helper()
	img, err := random.Image(512, layers)
	if err != nil {
		t.Fatal(err)
	}
	r := parseRef(t, ref)
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPushImage pushes an image whose base layers live in the target
// registry (mount asked, refused by this registry, so uploaded into the
// upload the refusal opened) or in another registry (a HEAD, no mount),
// and checks the image arrives whole, with its manifest PUT once at the
// tag.
func TestPushImage(t *testing.T) {
	for _, c := range []struct {
		name          string
		otherRegistry bool
		wantMounts    int // POSTs asking a mount
		wantHeads     int // blob HEADs
	}{
		{name: "base in the same registry", wantMounts: 3},
		{name: "base in another registry", otherRegistry: true, wantHeads: 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := startLoggingRegistry(t)
			src := target
			if c.otherRegistry {
				src = startLoggingRegistry(t)
			}
			img := layered(t, pushedBase(t, src.host()+"/base/os:1", 3))
			target.mu.Lock()
			target.reqs = nil
			target.mu.Unlock()
			tag := parseRef(t, target.host()+"/kiln/os:kiln-abc")
			r := Remote{Insecure: []string{target.host(), src.host()}}
			if err := r.PushImage(context.Background(), tag, img); err != nil {
				t.Fatal(err)
			}
			want, _ := img.Digest()
			got, err := remote.Head(tag)
			if err != nil || got.Digest != want {
				t.Fatalf("tag holds %v (%v), want %s", got, err, want)
			}
			pulled, err := remote.Image(tag)
			if err == nil {
				err = validateLayers(pulled)
			}
			if err != nil {
				t.Fatalf("pulling the pushed image: %v", err)
			}
			if n := target.count("PUT", "/manifests/"); n != 1 {
				t.Errorf("%d manifest PUTs, want 1", n)
			}
			if n := target.count("HEAD", "/blobs/"); n != c.wantHeads {
				t.Errorf("%d blob HEADs, want %d", n, c.wantHeads)
			}
			if n := target.mountRequests(); n != c.wantMounts {
				t.Errorf("%d mount requests, want %d", n, c.wantMounts)
			}
		})
	}
}

// TestPushImageRefusesAMisreportedDigest fails the push when the registry
// says it stored the manifest under another digest than its content's.
func TestPushImageRefusesAMisreportedDigest(t *testing.T) {
	reg := startLoggingRegistry(t)
	img := layered(t, pushedBase(t, reg.host()+"/base/os:1", 1))
	reg.digest = "sha256:" + strings.Repeat("0", 64)
	err := Remote{Insecure: []string{reg.host()}}.PushImage(context.Background(), parseRef(t, reg.host()+"/kiln/os:t"), img)
	if err == nil || !strings.Contains(err.Error(), "the registry stored it as sha256:000") {
		t.Fatalf("push with a misreported digest: %v, want an error naming both digests", err)
	}
}

func validateLayers(img v1.Image) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// TestPushImageUploadsWhatARefusedMountLeaves answers every mount with a
// refusal: 401 and 403 (the target's credential may not read the source)
// and 404 (no such source) leave each base layer to be read from its
// repository and uploaded, as containers/image does after a failed mount;
// any other answer fails the push and names the mount.
func TestPushImageUploadsWhatARefusedMountLeaves(t *testing.T) {
	for _, c := range []struct {
		status  int
		uploads int // blob PUTs: base layers, new layer, config
		fails   bool
	}{
		{status: http.StatusUnauthorized, uploads: 2 + 1 + 1},
		{status: http.StatusForbidden, uploads: 2 + 1 + 1},
		{status: http.StatusNotFound, uploads: 2 + 1 + 1},
		{status: http.StatusBadRequest, fails: true},
	} {
		t.Run(http.StatusText(c.status), func(t *testing.T) {
			reg := startLoggingRegistry(t)
			img := layered(t, pushedBase(t, reg.host()+"/base/os:1", 2))
			reg.mu.Lock()
			reg.reqs, reg.mountStatus = nil, c.status
			reg.mu.Unlock()
			tag := parseRef(t, reg.host()+"/kiln/os:t")
			err := Remote{Insecure: []string{reg.host()}, Backoff: remote.Backoff{Steps: 1}}.PushImage(context.Background(), tag, img)
			if c.fails {
				if err == nil || !strings.Contains(err.Error(), "mount=") {
					t.Fatalf("push after a %d to its mount: %v, want an error naming the mount", c.status, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("push after a %d to its mounts: %v", c.status, err)
			}
			if n := reg.mountRequests(); n != 2 {
				t.Errorf("%d mount requests, want 2", n)
			}
			if n := reg.count("PUT", "/blobs/uploads/"); n != c.uploads {
				t.Errorf("%d blob uploads, want %d", n, c.uploads)
			}
			pulled, err := remote.Image(tag)
			if err == nil {
				err = validateLayers(pulled)
			}
			if err != nil {
				t.Fatalf("pulling the pushed image: %v", err)
			}
		})
	}
}
