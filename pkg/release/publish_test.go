package release_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/release"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
)

func randomImages(t *testing.T) release.Images {
	t.Helper()
	var imgs release.Images
	var err error
	if imgs.Trigger, err = random.Image(512, 1); err != nil {
		t.Fatal(err)
	}
	if imgs.Steps, err = random.Image(512, 2); err != nil {
		t.Fatal(err)
	}
	return imgs
}

func startRegistry(t *testing.T) (string, registry.Remote) {
	t.Helper()
	srv := httptest.NewServer(ggcrregistry.New())
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	// An empty auth file: the user's own files are not read.
	auth := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(auth, []byte(`{"auths":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return host, registry.Remote{Insecure: []string{host}, AuthFile: auth}
}

func signer(keys string) release.Signer {
	o := sign.DefaultAttestOptions()
	o.SigningOptions = sign.SigningOptions{KeyPath: filepath.Join(keys, "cosign.key")}
	o.PasswordFile = filepath.Join(keys, "cosign.password")
	return o.Input
}

var amd64 = release.Platform{OS: "linux", Arch: "amd64"}

// Publish pushes both images by tag, and each one's cosign signature and
// SLSA provenance verify with the public key and bind the release inputs.
func TestPublishPushesSignsAndAttestsBothImages(t *testing.T) {
	host, r := startRegistry(t)
	keys := env.CosignKeys(t)
	imgs := randomImages(t)
	src := release.Source{Revision: strings.Repeat("c", 40)}
	pub, err := release.Publish(t.Context(), r, host+"/kiln", "v0.2.0", amd64, src, imgs, signer(keys))
	if err != nil {
		t.Fatal(err)
	}
	v, err := sign.LoadVerifier(filepath.Join(keys, "cosign.pub"))
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := imgs.Steps.Layers()
	base, _ := ls[0].Digest()
	for _, x := range []struct {
		name   string
		img    v1.Image
		pushed release.Pushed
		base   *v1.Hash
	}{{release.TriggerName, imgs.Trigger, pub.Trigger, nil}, {release.StepsName, imgs.Steps, pub.Steps, &base}} {
		d, _ := x.img.Digest()
		if want := host + "/kiln/" + x.name + "@" + d.String(); x.pushed.Image != want {
			t.Errorf("%s pushed as %s, want %s", x.name, x.pushed.Image, want)
		}
		ref, err := r.ParseRef(host + "/kiln/" + x.name + ":v0.2.0")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.HeadNamed(t.Context(), ref); err != nil {
			t.Errorf("reading %s: %v", ref, err)
		} else if got.Digest != d {
			t.Errorf("%s is %s, want %s", ref, got.Digest, d)
		}
		if err := sign.CosignVerify(t.Context(), r, x.pushed.Image, v); err != nil {
			t.Errorf("verifying %s: %v", x.pushed.Image, err)
		}
		sts, err := sign.VerifiedStatements(t.Context(), r, x.pushed.Image, v)
		if err != nil || len(sts) != 1 {
			t.Fatalf("provenance of %s: %d statements, %v", x.pushed.Image, len(sts), err)
		}
		got, err := trust.InputsOf(sts[0])
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(release.Inputs(x.name, "v0.2.0", amd64, src, x.base), got); diff != "" {
			t.Errorf("provenance inputs of %s (-want +got):\n%s", x.name, diff)
		}
	}
}

// A key that cannot be read stops Publish before its first push: no
// unsigned image is left in the registry.
func TestPublishWithoutKeyPushesNothing(t *testing.T) {
	host, r := startRegistry(t)
	_, err := release.Publish(t.Context(), r, host+"/kiln", "v0.2.0", amd64, release.Source{Revision: "c"}, randomImages(t),
		signer(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "cosign key") {
		t.Fatalf("Publish without a key: %v, want an error naming the cosign key", err)
	}
	for _, n := range []string{release.TriggerName, release.StepsName} {
		ref, _ := r.ParseRef(host + "/kiln/" + n + ":v0.2.0")
		if _, err := r.HeadNamed(t.Context(), ref); err == nil {
			t.Errorf("%s was pushed although signing could not start", ref)
		}
	}
}

// Bad tags and registries are refused before anything is built into a
// request, naming the value.
func TestPublishRefusesBadTagOrRegistry(t *testing.T) {
	host, r := startRegistry(t)
	for _, tc := range []struct{ repo, tag, want string }{
		{host + "/kiln", "v0.2.0/../x", `release tag "v0.2.0/../x"`},
		{host + "/kiln", "", `release tag ""`},
		{"", "v0.2.0", `registry ""`},
		{host + "/kiln/", "v0.2.0", "want host[:port]/namespace"},
	} {
		_, err := release.Publish(t.Context(), r, tc.repo, tc.tag, amd64, release.Source{}, randomImages(t), signer(t.TempDir()))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Publish(%q, %q): %v, want %q", tc.repo, tc.tag, err, tc.want)
		}
	}
}
