package proof_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/sign/proof"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
)

// TestProveAcceptsOnlyKilnsAttestationOfTheseInputs signs one image with
// kiln's key and another key, and checks Prove's answer for each identity,
// input set and digest, and that it never writes to the registry.
func TestProveAcceptsOnlyKilnsAttestationOfTheseInputs(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := t.Context()
	r := registry.Remote{Insecure: []string{reg.Host}}
	kiln, other := newKeys(t, "pw"), newKeys(t, "pw2")
	want := testInputs(t, reg.Host)
	signed := pushImage(t, reg.Host, "kiln/os:signed")
	foreign := pushImage(t, reg.Host, "kiln/os:foreign")
	unsigned := pushImage(t, reg.Host, "kiln/os:unsigned")
	for img, k := range map[string]keyPair{signed: kiln, foreign: other} {
		if _, err := sign.Sign(ctx, r, sign.SignInput{Image: img, Key: k.priv, Password: k.pass, Inputs: want}); err != nil {
			t.Fatal(err)
		}
	}
	otherInputs, err := trust.NodeImage{Pool: "infra", RenderedName: "rendered-infra-1", RenderedHash: "sha256:" + strings.Repeat("b", 64),
		BaseImage: reg.Host + "/base/os@sha256:" + strings.Repeat("c", 64), Source: "s", Builder: "fast"}.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	id := trust.Identity{PublicKey: kiln.pub}
	wc := &env.WriteCounter{Next: http.DefaultTransport}
	counted := registry.Remote{Insecure: []string{reg.Host}, Transport: wc}
	digest := func(s string) name.Digest {
		d, err := name.NewDigest(s, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if err := proof.Prove(ctx, counted, digest(signed), id, want); err != nil {
		t.Fatalf("kiln's own attestation of these inputs: %v", err)
	}
	for name, tc := range map[string]struct {
		image string
		id    trust.Identity
		want  trust.Inputs
		msg   string
	}{
		"another key signed it":  {foreign, id, want, "verifying the signature"},
		"nobody signed it":       {unsigned, id, want, "verifying the signature"},
		"other inputs":           {signed, id, otherInputs, "parameter"},
		"the other key's view":   {signed, trust.Identity{PublicKey: other.pub}, want, "verifying the signature"},
		"no identity configured": {signed, trust.Identity{}, want, "no signing identity"},
	} {
		err := proof.Prove(ctx, counted, digest(tc.image), tc.id, tc.want)
		if !errors.Is(err, trust.ErrNotProven) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want ErrNotProven saying %q", name, err, tc.msg)
		}
	}
	if n := wc.Writes(); n != 0 {
		t.Errorf("Prove made %d registry writes, want 0", n)
	}
}
