package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/signing"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
)

// verify -o json prints its decision on stdout as JSON, for a signed
// image (exit 0) and for a refused unsigned one (exit 3) alike; the
// progress lines go to stderr.
func TestVerifyJSON(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	kp, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte("pw"), nil })
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(pub, kp.PublicBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	signed, unsigned := pushRandom(t, reg.Host, "kiln/signed"), pushRandom(t, reg.Host, "kiln/unsigned")
	in, err := trust.NodeImage{Pool: "worker", RenderedName: "rendered-worker-1", RenderedHash: "sha256:" + strings.Repeat("b", 64),
		BaseImage: reg.Host + "/base/os@sha256:" + strings.Repeat("c", 64), Source: "https://github.com/kiln-dev/kiln", Builder: "fast"}.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Sign(context.Background(), registry.Remote{Insecure: []string{reg.Host}},
		sign.SignInput{Image: signed, Key: kp.PrivateBytes, Password: []byte("pw"), Inputs: in, RunID: "run-1"}); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		image string
		code  int
		want  signing.VerifyResult
	}{
		{signed, exitcode.ExitOK, signing.VerifyResult{Image: signed, Verified: true}},
		{unsigned, exitcode.ExitRefused, signing.VerifyResult{Image: unsigned, Verified: false}},
	} {
		work := t.TempDir()
		r := execute(newSteps(noEnv), "verify", "-o", "json", "--pool", "worker", "--work", work, "--results-dir", t.TempDir(),
			"--image", c.image, "--public-key", pub, "--insecure-registry", reg.Host)
		if r.code != c.code {
			t.Fatalf("%s: exit %d %q, want %d", c.image, r.code, r.err, c.code)
		}
		var got signing.VerifyResult
		if err := json.Unmarshal([]byte(r.out), &got); err != nil {
			t.Fatalf("stdout is not JSON alone: %v\n%s", err, r.out)
		}
		if diff := cmp.Diff(c.want, got, cmpopts.IgnoreFields(signing.VerifyResult{}, "Policy", "Registries", "Reason")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.image, diff)
		}
		if got.Policy != filepath.Join(work, "image", "policy.json") {
			t.Errorf("policy %q, want the one under --work", got.Policy)
		}
		if (got.Reason == "") != c.want.Verified {
			t.Errorf("reason %q for verified=%v", got.Reason, c.want.Verified)
		}
		if !strings.Contains(r.err, "[verify] policy fragment for nodes") {
			t.Errorf("progress is not on stderr: %q", r.err)
		}
	}
}

// pushRandom pushes a random image to host/repo and returns it by digest.
func pushRandom(t *testing.T, host, repo string) string {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host+"/"+repo+":v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Context().Digest(d.String()).String()
}
