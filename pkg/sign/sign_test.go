package sign

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	intoto "github.com/in-toto/in-toto-golang/in_toto"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	cremote "github.com/sigstore/cosign/v2/pkg/cosign/remote"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
)

type keyPair struct {
	priv, pub, pass []byte
	pubPath         string
}

func newKeys(t *testing.T, pass string) keyPair {
	t.Helper()
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte(pass), nil })
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(p, kb.PublicBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	return keyPair{priv: kb.PrivateBytes, pub: kb.PublicBytes, pass: []byte(pass), pubPath: p}
}

// pushImage pushes a random image to repoTag and returns it by digest.
func pushImage(t *testing.T, host, repoTag string) string {
	t.Helper()
	img, _ := random.Image(1024, 1)
	ref, _ := name.ParseReference(host+"/"+repoTag, name.Insecure)
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return ref.Context().Digest(d.String()).String()
}

// testInputs are a node image's inputs with fixed digests.
func testInputs(t testing.TB, host string) trust.Inputs {
	t.Helper()
	in, err := trust.NodeImage{Pool: "worker", RenderedName: "rendered-worker-1", RenderedHash: "sha256:" + strings.Repeat("b", 64),
		BaseImage: host + "/base/os@sha256:" + strings.Repeat("c", 64), KmodDigests: []string{"sha256:" + strings.Repeat("d", 64)},
		Source: "https://github.com/kiln-dev/kiln", Builder: "fast"}.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestSignAndVerify(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := context.Background()
	r := registry.Remote{Insecure: []string{reg.Host}}
	keys := newKeys(t, "pw")
	image := pushImage(t, reg.Host, "kiln/os:v1")
	prov := testInputs(t, reg.Host)

	res, err := Sign(ctx, r, SignInput{Image: image, Key: keys.priv, Password: keys.pass, Inputs: prov, RunID: "kiln-worker-abc"})
	if err != nil {
		t.Fatal(err)
	}
	_, imgDigest, _ := strings.Cut(image, "@")
	sigTag := reg.Host + "/kiln/os:" + strings.Replace(imgDigest, ":", "-", 1)
	if !strings.HasPrefix(res.SignatureRef, sigTag+".sig@sha256:") || !strings.HasPrefix(res.AttestationRef, sigTag+".att@sha256:") {
		t.Fatalf("refs %+v", res)
	}
	// Signing again adds no duplicate signature.
	if _, err := Sign(ctx, r, SignInput{Image: image, Key: keys.priv, Password: keys.pass, Inputs: prov, RunID: "kiln-worker-abc"}); err != nil {
		t.Fatal(err)
	}

	v, err := LoadVerifier(keys.pubPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := CosignVerify(ctx, r, image, v); err != nil {
		t.Fatalf("cosign's verification refused our signature: %v", err)
	}
	// The attestation carries the inputs.
	stmts, err := VerifiedStatements(ctx, r, image, v)
	if err != nil || len(stmts) != 1 {
		t.Fatalf("attestations: %d, %v", len(stmts), err)
	}
	if d := stmts[0].Subject[0].Digest["sha256"]; "sha256:"+d != image[strings.LastIndex(image, "@")+1:] {
		t.Errorf("statement subject digest %s, want the image %s", d, image)
	}
	if got := StatementInputs(stmts[0])["oci://"+reg.Host+"/base/os"]; got != "sha256:"+strings.Repeat("c", 64) {
		t.Errorf("StatementInputs: base %q, want the provenance's base image digest", got)
	}
	stmt, _ := json.Marshal(stmts[0])
	for _, want := range []string{"https://slsa.dev/provenance/v1", strings.Repeat("b", 64), "kiln-worker-abc", strings.Repeat("c", 64), strings.Repeat("d", 64)} {
		if !strings.Contains(string(stmt), want) {
			t.Errorf("statement lacks %q: %s", want, stmt)
		}
	}
	ref, _ := r.ParseRef(image)
	sigs, _, err := cosign.VerifyImageSignatures(ctx, ref, &cosign.CheckOpts{SigVerifier: v, IgnoreTlog: true, IgnoreSCT: true, ClaimVerifier: cosign.SimpleClaimVerifier})
	if err != nil || len(sigs) != 1 {
		t.Errorf("signatures after signing twice: %d (%v), want 1", len(sigs), err)
	}

	wrong, _ := LoadVerifier(newKeys(t, "x").pubPath)
	if err := CosignVerify(ctx, r, image, wrong); err == nil {
		t.Error("cosign verification accepted a wrong key")
	}
}

func TestSignRefusals(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := context.Background()
	r := registry.Remote{Insecure: []string{reg.Host}}
	keys := newKeys(t, "pw")
	image := pushImage(t, reg.Host, "kiln/os:v1")
	in := testInputs(t, reg.Host)
	tests := []struct {
		name string
		in   SignInput
		want string
	}{
		{"tag", SignInput{Image: reg.Host + "/kiln/os:v1", Key: keys.priv, Password: keys.pass, Inputs: in}, "by digest"},
		{"bad password", SignInput{Image: image, Key: keys.priv, Password: []byte("nope"), Inputs: in}, "loading the cosign key"},
		{"keyless incomplete", SignInput{Image: image, Keyless: &KeylessOptions{}, Inputs: in}, "keyless needs"},
		{"no inputs", SignInput{Image: image, Key: keys.priv, Password: keys.pass}, "no build type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Sign(ctx, r, tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), string(keys.priv)) {
				t.Fatal("error leaks the key")
			}
		})
	}
	_, err := Sign(ctx, r, SignInput{Image: image, Keyless: &KeylessOptions{FulcioURL: "a", RekorURL: "b", IDTokenPath: "/nonexistent/token"}, Inputs: in})
	if err == nil || !strings.Contains(err.Error(), "keyless: reading the identity token") {
		t.Errorf("keyless without a token: %v", err)
	}
}

// Two signers share the .sig and .att tags, and cosign's layout is a
// read-modify-write with no lock: a writer that read before kiln wrote can
// drop kiln's signature (Tekton Chains signs image-build's image as
// image-sign starts). published sees the loss, and signing again restores
// kiln's signature on top of the other's, which stays.
func TestSignSurvivesAnotherWriter(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := context.Background()
	r := registry.Remote{Insecure: []string{reg.Host}}
	image := pushImage(t, reg.Host, "kiln/os:v1")
	kiln, other := newKeys(t, "pw"), newKeys(t, "pw2")
	sign := func(k keyPair) {
		t.Helper()
		if _, err := Sign(ctx, r, SignInput{Image: image, Key: k.priv, Password: k.pass, Inputs: testInputs(t, reg.Host)}); err != nil {
			t.Fatal(err)
		}
	}
	sign(other)
	digest, _ := name.NewDigest(image, name.Insecure)
	stale, err := ociremote.SignedEntity(digest) // what the other writer read
	if err != nil {
		t.Fatal(err)
	}
	sign(kiln)
	if err := ociremote.WriteSignatures(digest.Context(), stale); err != nil { // its late write
		t.Fatal(err)
	}
	kv, _ := LoadVerifier(kiln.pubPath)
	ov, _ := LoadVerifier(other.pubPath)
	sv, _ := cosign.LoadPrivateKey(kiln.priv, kiln.pass, nil)
	sig, _ := signatureFor(ctx, digest, sv, nil)
	att, _ := attestationFor(ctx, digest, sv, nil, testInputs(t, reg.Host), "", nil)
	if ok, err := published(digest, cremote.NewDupeDetector(kv), sig, att, nil); err != nil || ok {
		t.Fatalf("published after the other writer dropped kiln's signature: %v, %v; want false", ok, err)
	}
	sign(kiln)
	for name, v := range map[string]signature.Verifier{"kiln's": kv, "the other signer's": ov} {
		if _, _, err := cosign.VerifyImageSignatures(ctx, digest, &cosign.CheckOpts{SigVerifier: v, IgnoreTlog: true, IgnoreSCT: true,
			ClaimVerifier: cosign.SimpleClaimVerifier}); err != nil {
			t.Errorf("%s signature after kiln signed again: %v", name, err)
		}
	}
}

// TestResigningWithAnotherKeyKeepsTheFirstKeysAttestation signs and attests
// one image with key A, then key B, then A again in a new run: each key's
// signature verifies, and each key finds exactly one attestation of its
// own (A's second replaced its first; B's was kept).
func TestResigningWithAnotherKeyKeepsTheFirstKeysAttestation(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := t.Context()
	r := registry.Remote{Insecure: []string{reg.Host}}
	a, b := newKeys(t, "pa"), newKeys(t, "pb")
	image := pushImage(t, reg.Host, "kiln/os:1")
	in := testInputs(t, reg.Host)
	for i, k := range []keyPair{a, b, a} {
		if _, err := Sign(ctx, r, SignInput{Image: image, Key: k.priv, Password: k.pass, Inputs: in, RunID: fmt.Sprintf("run-%d", i)}); err != nil {
			t.Fatalf("signing %d: %v", i, err)
		}
	}
	d, err := name.NewDigest(image, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		key     keyPair
		wantRun string
	}{{"A", a, "run-2"}, {"B", b, "run-1"}} {
		sts, err := Statements(ctx, r, d, trust.Identity{PublicKey: tc.key.pub})
		if err != nil {
			t.Fatalf("key %s: %v", tc.name, err)
		}
		if len(sts) != 1 {
			t.Fatalf("key %s finds %d attestations, want 1", tc.name, len(sts))
		}
		if got := invocationID(t, sts[0]); got != tc.wantRun {
			t.Errorf("key %s's attestation is of run %q, want %q", tc.name, got, tc.wantRun)
		}
		if err := Prove(ctx, r, d, trust.Identity{PublicKey: tc.key.pub}, in); err != nil {
			t.Errorf("key %s: %v", tc.name, err)
		}
	}
}

// invocationID is the run a kiln provenance statement names.
func invocationID(t *testing.T, st intoto.Statement) string {
	t.Helper()
	b, _ := json.Marshal(st.Predicate)
	var p struct {
		RunDetails struct {
			Metadata struct {
				InvocationID string `json:"invocationID"`
			} `json:"metadata"`
		} `json:"runDetails"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p.RunDetails.Metadata.InvocationID
}

// TestKeylessResigningReplacesOnlyTheSameIdentity: a keyless identity's
// new attestation replaces its own earlier one (whatever the ephemeral
// key), and keeps a cosign key's and another keyless identity's.
func TestKeylessResigningReplacesOnlyTheSameIdentity(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := t.Context()
	r := registry.Remote{Insecure: []string{reg.Host}}
	fulcio, _, root := fakeFulcioWithRoot(t)
	image := pushImage(t, reg.Host, "kiln/os:1")
	in := testInputs(t, reg.Host)
	key := newKeys(t, "pa")
	const kiln, other = "kiln@kiln.test", "other@kiln.test"
	keyless := func(email string) *KeylessOptions {
		return &KeylessOptions{FulcioURL: fulcio.URL, IDTokenPath: writeToken(t, `{"iss":"`+testIssuer+`","email":"`+email+`","sub":"x"}`)}
	}
	for i, si := range []SignInput{
		{Keyless: keyless(kiln)}, {Key: key.priv, Password: key.pass}, {Keyless: keyless(other)}, {Keyless: keyless(kiln)},
	} {
		si.Image, si.Inputs, si.RunID = image, in, fmt.Sprintf("run-%d", i)
		if _, err := Sign(ctx, r, si); err != nil {
			t.Fatalf("signing %d: %v", i, err)
		}
	}
	d, err := name.NewDigest(image, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		id      trust.Identity
		wantRun string
	}{
		{"keyless kiln", trust.Identity{Roots: root, Subject: kiln, Issuer: testIssuer}, "run-3"},
		{"key", trust.Identity{PublicKey: key.pub}, "run-1"},
		{"keyless other", trust.Identity{Roots: root, Subject: other, Issuer: testIssuer}, "run-2"},
	} {
		sts, err := Statements(ctx, r, d, tc.id)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(sts) != 1 || invocationID(t, sts[0]) != tc.wantRun {
			var runs []string
			for _, st := range sts {
				runs = append(runs, invocationID(t, st))
			}
			t.Errorf("%s finds attestations of runs %v, want only %s", tc.name, runs, tc.wantRun)
		}
	}
}
