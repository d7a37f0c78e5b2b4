package proof

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/static"
	intoto "github.com/in-toto/in-toto-golang/in_toto"
	ssldsse "github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
)

// fuzzDigest is the image digest the fuzzed layers are checked against.
var fuzzDigest = v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("a", 64)}

// FuzzVerifyLayer feeds arbitrary layer content and annotations to the
// signature and attestation checks with a fixed key, seeded with layers
// that key signed. It fails on a panic, and on an accepted layer that a
// direct check disproves: a signature must verify over the content and
// name the digest; an attestation must be an in-toto DSSE envelope the
// key signed whose statement has the digest as a subject.
func FuzzVerifyLayer(f *testing.F) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	sv, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		f.Fatal(err)
	}
	simple := []byte(`{"critical":{"identity":{"docker-reference":"r.example/os"},"image":{"docker-manifest-digest":"` + fuzzDigest.String() + `"},"type":"cosign container image signature"},"optional":null}`)
	sig, err := sv.SignMessage(bytes.NewReader(simple))
	if err != nil {
		f.Fatal(err)
	}
	st := []byte(`{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"p","subject":[{"name":"r.example/os","digest":{"sha256":"` + fuzzDigest.Hex + `"}}],"predicate":{}}`)
	env, err := dsse.WrapSigner(sv, intotoPayloadType).SignMessage(bytes.NewReader(st))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(simple, base64.StdEncoding.EncodeToString(sig), "", "", false)
	f.Add(env, "", "", "", true)
	f.Add(env, "x", "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n", `{"Payload":5}`, true)
	f.Fuzz(func(t *testing.T, content []byte, sigAnn, certAnn, bundleAnn string, att bool) {
		ann := map[string]string{}
		for k, v := range map[string]string{sigKey: sigAnn, certKey: certAnn, bundleKey: bundleAnn} {
			if v != "" {
				ann[k] = v
			}
		}
		if att {
			// An attestation layer always carries an (empty) signature
			// annotation, as cosign writes it.
			ann[sigKey] = sigAnn
		}
		sum := sha256.Sum256(content)
		l := Attestation{
			desc:  v1.Descriptor{Digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}, Size: int64(len(content)), Annotations: ann},
			layer: static.NewLayer(content, "application/octet-stream"),
		}
		c := &Checks{Key: sv}
		if !att {
			if c.verifySignature(context.Background(), l, fuzzDigest) == nil {
				mustBeSigned(t, sv, content, sigAnn)
			}
			return
		}
		if c.verifyAttestation(context.Background(), l, fuzzDigest) == nil {
			mustBeAttested(t, sv, content)
		}
	})
}

// mustBeSigned fails unless sigAnn is sv's signature over content and
// content names fuzzDigest.
func mustBeSigned(t *testing.T, sv signature.Verifier, content []byte, sigAnn string) {
	sig, err := base64.StdEncoding.DecodeString(sigAnn)
	if err != nil || sv.VerifySignature(bytes.NewReader(sig), bytes.NewReader(content)) != nil {
		t.Fatalf("accepted a signature that does not verify: %q over %q", sigAnn, content)
	}
	var p struct {
		Critical struct {
			Image struct {
				Digest string `json:"docker-manifest-digest"`
			} `json:"image"`
		} `json:"critical"`
	}
	if err := json.Unmarshal(content, &p); err != nil || p.Critical.Image.Digest != fuzzDigest.String() {
		t.Fatalf("accepted a payload that does not name %s: %q", fuzzDigest, content)
	}
}

// mustBeAttested fails unless content is an in-toto DSSE envelope sv
// signed about fuzzDigest.
func mustBeAttested(t *testing.T, sv signature.Verifier, content []byte) {
	var env ssldsse.Envelope
	if err := json.Unmarshal(content, &env); err != nil || env.PayloadType != intotoPayloadType {
		t.Fatalf("accepted what is not an in-toto envelope: %q", content)
	}
	v, err := ssldsse.NewEnvelopeVerifier(&dsse.VerifierAdapter{SignatureVerifier: sv})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), &env); err != nil {
		t.Fatalf("accepted an envelope the key did not sign: %v", err)
	}
	raw, _ := base64.StdEncoding.DecodeString(env.Payload)
	var st intoto.Statement
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("accepted an envelope without a statement: %v", err)
	}
	for _, s := range st.Subject {
		if s.Digest["sha256"] == fuzzDigest.Hex {
			return
		}
	}
	t.Fatalf("accepted a statement not about %s: %s", fuzzDigest, raw)
}
