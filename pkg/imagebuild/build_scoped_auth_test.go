package imagebuild

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// userLog records, for each request to a repository, the user of the
// basic credential it carried and the registry's answer.
type userLog struct {
	mu   sync.Mutex
	next http.RoundTripper
	reqs []userReq
}

type userReq struct {
	method, repo, what, user string
	status                   int
}

func (l *userLog) RoundTrip(r *http.Request) (*http.Response, error) {
	m := v2Path.FindStringSubmatch(r.URL.Path)
	resp, err := l.next.RoundTrip(r)
	if m == nil || err != nil {
		return resp, err
	}
	user, _, _ := r.BasicAuth()
	what := m[2]
	if r.URL.Query().Has("mount") {
		what = "mount from " + r.URL.Query().Get("from")
	}
	l.mu.Lock()
	l.reqs = append(l.reqs, userReq{method: r.Method, repo: m[1], what: what, user: user, status: resp.StatusCode})
	l.mu.Unlock()
	return resp, nil
}

// TestBuildFastPathWithRepositoryScopedCredentials builds a config-only
// image from a base in openshift/rhcos into kiln/node-image-worker on
// docker-registry with htpasswd, with the auth file podman writes after
// logging in to the two repositories: one entry each, each its own user,
// no entry for the host. The build must succeed, every request must carry
// the user of the repository it goes to (the mount, sent to the target,
// the target's), and the base layers must be mounted, not uploaded again.
func TestBuildFastPathWithRepositoryScopedCredentials(t *testing.T) {
	home := t.TempDir() // no credentials of this machine
	t.Setenv("HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("DOCKER_CONFIG", filepath.Join(home, ".docker"))
	// Unset, not empty: kiln must find no auth file of this machine's user.
	t.Setenv("REGISTRY_AUTH_FILE", "")
	os.Unsetenv("REGISTRY_AUTH_FILE")
	users := map[string]string{"rhcos-reader": "rhcos-pass", "kiln-pusher": "kiln-pass"}
	reg := env.StartRegistry(t, env.RegistryOptions{Users: users})
	userOf := map[string]string{"openshift/rhcos": "rhcos-reader", "kiln/node-image-worker": "kiln-pusher"}
	authFile := filepath.Join(t.TempDir(), "auth.json")
	entry := func(user string) string {
		return base64.StdEncoding.EncodeToString([]byte(user + ":" + users[user]))
	}
	doc := fmt.Sprintf(`{"auths":{%q:{"auth":%q},%q:{"auth":%q}}}`,
		reg.Host+"/openshift/rhcos", entry("rhcos-reader"), reg.Host+"/kiln", entry("kiln-pusher"))
	if err := os.WriteFile(authFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	log := &userLog{next: http.DefaultTransport}
	r := registry.Remote{AuthFile: authFile, Insecure: []string{reg.Host}, Transport: log}
	ctx := context.Background()
	const layers = 3
	pushScopedBase(ctx, t, r, reg.Host+"/openshift/rhcos:4.18", layers)
	log.reqs = nil

	res, err := Build(ctx, r, testInput(t, reg.Host, "openshift/rhcos:4.18", "kiln/node-image-worker", "hello\n"))
	if err != nil {
		t.Fatalf("building with repository-scoped credentials: %v", err)
	}
	if res.Reused {
		t.Fatalf("result %+v: a first build reused", res)
	}
	mounted, uploads := 0, 0
	for _, q := range log.reqs {
		if want := userOf[q.repo]; q.user != want {
			t.Errorf("%s %s %s carried user %q, want %q", q.method, q.repo, q.what, q.user, want)
		}
		switch {
		case q.what == "mount from openshift/rhcos" && q.status == http.StatusCreated:
			mounted++
		case q.method == http.MethodPut && q.what == "blobs/uploads":
			uploads++
		}
	}
	// The new layer and the config are the only blobs uploaded.
	if mounted != layers || uploads != 2 {
		t.Errorf("%d base layers mounted, %d blobs uploaded; want %d and 2\nrequests: %+v", mounted, uploads, layers, log.reqs)
	}
}

// pushScopedBase pushes a random base with the version label to ref with
// r, so with ref's own credential.
func pushScopedBase(ctx context.Context, t *testing.T, r registry.Remote, ref string, layers int64) {
	t.Helper()
	// The node import check needs one kernel: the last layer holds it.
	img, err := random.Image(64<<10, layers-1)
	if err != nil {
		t.Fatal(err)
	}
	img = env.WithKernel(t, img)
	cf, _ := img.ConfigFile()
	cfg := cf.Config
	cfg.Labels = map[string]string{imagetest.VersionLabel: "9.6.20250101-0"}
	if img, err = mutate.Config(img, cfg); err != nil {
		t.Fatal(err)
	}
	parsed, err := r.ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Write(ctx, parsed, img); err != nil {
		t.Fatalf("pushing the base %s: %v", ref, err)
	}
}
