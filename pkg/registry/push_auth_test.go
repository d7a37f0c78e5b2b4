package registry_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// The form podman writes after `podman login registry:5000/openshift/rhcos`
// and `podman login registry:5000/kiln`: two repository-scoped entries, no
// host-wide one, each with its own user.
const (
	baseRepo, baseUser, basePass       = "openshift/rhcos", "rhcos-reader", "rhcos-pass"
	targetRepo, targetUser, targetPass = "kiln/node-image-worker", "kiln-pusher", "kiln-pass"
	baseLayers                         = 3
)

// userFor is the user whose credential the auth file gives each repository.
var userFor = map[string]string{baseRepo: baseUser, targetRepo: targetUser, mirrorRepo: mirrorUser}

// TestPushConfigOnlyBuildAcrossRepositoriesWithRepositoryScopedCredentials
// pushes a config-only build (the base's layers, a new config) from
// openshift/rhcos to kiln/node-image-worker with an auth file holding only
// repository-scoped entries, against docker-registry behind a front that
// enforces access per repository, with basic auth and with tokens. Every
// request must carry the credential of the repository it is sent to; the
// mount (sent to the target) carries the target's, as containers/image
// sends it. When the target's user may read the base, the base layers are
// mounted and only the config is uploaded; when it may not, the mount is
// refused and each base layer is read from openshift/rhcos with its own
// credential and uploaded.
func TestPushConfigOnlyBuildAcrossRepositoriesWithRepositoryScopedCredentials(t *testing.T) {
	own := map[string][]string{baseRepo: {baseUser}, targetRepo: {targetUser}}
	shared := map[string][]string{baseRepo: {baseUser, targetUser}, targetRepo: {targetUser}}
	for _, c := range []struct {
		name   string
		bearer bool
		acl    map[string][]string
		mount  bool // the base layers are mounted, not uploaded
		// tries is how many mount requests each layer sends: a token
		// registry's 401 makes go-containerregistry's transport fetch a
		// new token and send the request once more.
		tries int
	}{
		{name: "basic auth, htpasswd lets every user everywhere", acl: nil, mount: true, tries: 1},
		{name: "basic auth, each user its own repositories", acl: own, mount: false, tries: 1},
		{name: "token auth, the target's user may read the base", bearer: true, acl: shared, mount: true, tries: 1},
		{name: "token auth, each user its own repositories", bearer: true, acl: own, mount: false, tries: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			isolate(t)
			f := startACLFront(t, map[string]string{baseUser: basePass, targetUser: targetPass}, c.acl, c.bearer)
			authFile := writeAuthFile(t, filepath.Join(t.TempDir(), "auth.json"), auths(map[string]map[string]string{
				f.host + "/" + baseRepo: entry(baseUser, basePass),
				f.host + "/kiln":        entry(targetUser, targetPass),
			}))
			r := registry.Remote{AuthFile: authFile, Insecure: []string{f.host}, Backoff: remote.Backoff{Steps: 1}}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			img := configOnlyBuild(ctx, t, r, f.host+"/"+baseRepo+":4.18")
			f.requests() // the base's push and pull are not under test here
			tag, err := r.ParseRef(f.host + "/" + targetRepo + ":kiln-abc")
			if err != nil {
				t.Fatal(err)
			}
			if err := r.PushImage(ctx, tag, img); err != nil {
				t.Fatalf("pushing %s: %v", tag, err)
			}
			reqs, tokens := f.requests()
			checkCredentials(t, reqs)
			checkBaseOnlyRead(t, reqs)
			checkMounts(t, reqs, c.mount, c.tries)
			if c.bearer {
				want := tokenReq{User: targetUser, Scopes: []string{
					"repository:" + targetRepo + ":push,pull", "repository:" + baseRepo + ":pull",
				}}
				if diff := cmp.Diff(want, tokens[0]); diff != "" {
					t.Errorf("the push's token request (-want +got):\n%s", diff)
				}
				checkTokenUsers(t, tokens[1:])
			}

			// Reads of what was pushed (verify, rollout) use the target's
			// credential and find the image whole.
			want, _ := img.Digest()
			if d, err := r.HeadNamed(ctx, tag); err != nil || d.Digest != want {
				t.Fatalf("tag %s holds %v (%v), want %s", tag, d, err, want)
			}
			pulled, err := r.ImageNamed(ctx, tag)
			if err == nil {
				err = readLayers(pulled)
			}
			if err != nil {
				t.Fatalf("reading back %s: %v", tag, err)
			}
			reqs, _ = f.requests()
			checkCredentials(t, reqs)
		})
	}
}

// configOnlyBuild pushes a random base to ref with r (so with ref's own
// credential), reads it back the way a build reads its base, and returns
// it with a new config: the layers stay mountable from ref's repository.
func configOnlyBuild(ctx context.Context, t *testing.T, r registry.Remote, ref string) v1.Image {
	t.Helper()
	base, err := random.Image(2048, baseLayers)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := r.ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Write(ctx, parsed, base); err != nil {
		t.Fatalf("pushing the base: %v", err)
	}
	pulled, err := r.Image(ctx, parsed)
	if err != nil {
		t.Fatalf("reading the base: %v", err)
	}
	cfg, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Labels = map[string]string{"io.kiln.fingerprint": "abc"}
	img, err := mutate.ConfigFile(pulled, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// checkCredentials fails on a request that carried another credential
// than its repository's, or none. A mount is sent to the target and
// carries the target's credential.
func checkCredentials(t *testing.T, reqs []frontReq) {
	t.Helper()
	if len(reqs) == 0 {
		t.Fatal("no request reached the registry")
	}
	for _, q := range reqs {
		if want := userFor[q.Repo]; q.User != want {
			t.Errorf("%s %s (from %q) carried user %q, want %q", q.Method, q.Repo, q.From, q.User, want)
		}
	}
}

// checkBaseOnlyRead fails on a write to the base's repository: a push
// only reads (or mounts from) there.
func checkBaseOnlyRead(t *testing.T, reqs []frontReq) {
	t.Helper()
	for _, q := range reqs {
		if q.Repo == baseRepo && q.Method != http.MethodGet && q.Method != http.MethodHead {
			t.Errorf("%s %s: the push wrote to the base's repository", q.Method, q.Repo)
		}
	}
}

// checkMounts checks that every base layer was mounted (and only the
// config uploaded), or that every mount was refused and each base layer
// was read from its repository and uploaded, each layer's mount asked
// tries times.
func checkMounts(t *testing.T, reqs []frontReq, mounted bool, tries int) {
	t.Helper()
	var mounts, refused, uploads, baseReads int
	for _, q := range reqs {
		switch {
		case q.Method == http.MethodPost && q.From == baseRepo:
			mounts++
			if q.Status != http.StatusCreated {
				refused++
			}
		case q.Method == http.MethodPut && q.Repo == targetRepo && q.Status == http.StatusCreated && q.From == "":
			uploads++
		case q.Method == http.MethodGet && q.Repo == baseRepo:
			baseReads++
		}
	}
	// One manifest PUT is among the uploads counted.
	want := [4]int{baseLayers * tries, 0, 1 + 1, 0}
	if !mounted {
		want = [4]int{baseLayers * tries, baseLayers * tries, baseLayers + 1 + 1, baseLayers}
	}
	got := [4]int{mounts, refused, uploads, baseReads}
	if got != want {
		t.Errorf("mount requests, refused mounts, PUTs to the target, reads of the base = %v, want %v\nrequests: %+v", got, want, reqs)
	}
}

// checkTokenUsers fails on a token asked with a user the auth file does
// not give the repository: a request that names the target's push is the
// push's, asked with the target's credential (pull on the base with it, as
// containers/image asks); any other asks with each repository's own.
func checkTokenUsers(t *testing.T, tokens []tokenReq) {
	t.Helper()
	for _, tr := range tokens {
		want := ""
		for _, s := range tr.Scopes {
			repo, push := scopeRepo(s)
			switch {
			case push && repo == targetRepo:
				want = targetUser
			case want == "":
				want = userFor[repo]
			}
		}
		if tr.User != want {
			t.Errorf("token for %v asked as %q, want %q", tr.Scopes, tr.User, want)
		}
	}
}

// scopeRepo returns the repository of a scope and whether it asks push.
func scopeRepo(scope string) (string, bool) {
	parts := strings.Split(scope, ":")
	if len(parts) != 3 {
		return scope, false
	}
	return parts[1], slices.Contains(strings.Split(parts[2], ","), "push")
}

// readLayers downloads every layer of img (and so checks its digest).
func readLayers(img v1.Image) error {
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
