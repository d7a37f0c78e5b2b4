package sign

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

// TestSignVerifyWithTLSAndAuth signs and verifies against a registry that
// needs TLS and htpasswd credentials; wrong credentials are reported as an
// authentication failure.
func TestSignVerifyWithTLSAndAuth(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{TLS: true, Users: map[string]string{"kiln": "s3cret"}})
	ctx := context.Background()
	img, _ := random.Image(512, 1)
	ref, _ := name.ParseReference(reg.Host + "/kiln/os:1")
	if err := remote.Write(ref, img, remote.WithTransport(reg.Transport()),
		remote.WithAuth(&authn.Basic{Username: "kiln", Password: "s3cret"})); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	image := ref.Context().Digest(d.String()).String()
	dir := t.TempDir()
	good := authFile(t, dir, "good.json", reg.Host, "kiln", "s3cret")
	bad := authFile(t, dir, "bad.json", reg.Host, "kiln", "nope")
	certDir := filepath.Join(dir, "certs")
	os.MkdirAll(certDir, 0o755)
	ca, _ := os.ReadFile(reg.CAFile())
	os.WriteFile(filepath.Join(certDir, "ca.crt"), ca, 0o644)
	keys := newKeys(t, "pw")

	_, err := Sign(ctx, registry.Remote{AuthFile: bad, Transport: reg.Transport(), Backoff: remote.Backoff{Steps: 1}},
		SignInput{Image: image, Key: keys.priv, Password: keys.pass, Inputs: testInputs(t, reg.Host)})
	if !errors.Is(err, registry.ErrAuth) {
		t.Fatalf("sign with wrong credentials: %v, want an auth failure", err)
	}
	if _, err := Sign(ctx, registry.Remote{AuthFile: good, Transport: reg.Transport()},
		SignInput{Image: image, Key: keys.priv, Password: keys.pass, Inputs: testInputs(t, reg.Host)}); err != nil {
		t.Fatal(err)
	}
	in := PolicyInput{Image: image, KeyPath: keys.pubPath, AuthFile: good, CertDir: certDir, OutDir: t.TempDir()}
	if _, err := VerifyPolicy(ctx, in); err != nil {
		t.Fatalf("verify over TLS with credentials: %v", err)
	}
	in.AuthFile = bad
	_, err = VerifyPolicy(ctx, in)
	if !errors.Is(err, registry.ErrAuth) || errors.Is(err, ErrPolicy) {
		t.Fatalf("verify with wrong credentials: %v, want a registry auth error, not a policy refusal", err)
	}
}

func authFile(t *testing.T, dir, file, host, user, pass string) string {
	t.Helper()
	p := filepath.Join(dir, file)
	a := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	if err := os.WriteFile(p, []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, a)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestVerifyPolicyTrustsTheRegistriesFolderCA verifies over TLS with the
// registry's CA given only as certs.d/<host:port>/ca.crt of a registries
// folder (no registries.conf in it): the CA is trusted for that host, and
// a folder holding it under another host's name does not help.
func TestVerifyPolicyTrustsTheRegistriesFolderCA(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{TLS: true})
	ctx := context.Background()
	img, _ := random.Image(512, 1)
	ref, _ := name.ParseReference(reg.Host + "/kiln/os:1")
	if err := remote.Write(ref, img, remote.WithTransport(reg.Transport())); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	image := ref.Context().Digest(d.String()).String()
	keys := newKeys(t, "pw")
	if _, err := Sign(ctx, registry.Remote{Transport: reg.Transport()},
		SignInput{Image: image, Key: keys.priv, Password: keys.pass, Inputs: testInputs(t, reg.Host)}); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(reg.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	folder := func(host string) string {
		dir := t.TempDir()
		certs := filepath.Join(dir, registry.CertsDir, host)
		if err := os.MkdirAll(certs, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(certs, "ca.crt"), ca, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	in := PolicyInput{Image: image, KeyPath: keys.pubPath, RegistriesDir: folder(reg.Host), OutDir: t.TempDir()}
	if _, err := VerifyPolicy(ctx, in); err != nil {
		t.Fatalf("verify with the CA in certs.d/%s: %v", reg.Host, err)
	}
	in.RegistriesDir = folder("other.example:5000")
	if _, err := VerifyPolicy(ctx, in); err == nil || errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("verify with the CA under another host: %v, want a TLS failure reading the image", err)
	}
}
