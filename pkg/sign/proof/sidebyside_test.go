package proof_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/oci"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	ctypes "github.com/sigstore/cosign/v2/pkg/types"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/sign/proof"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// artifacts are an image's .sig and .att layers; nil writes no artifact.
type artifacts struct{ sigs, atts []oci.Signature }

// sideBySide is one registry state the proof and cosign both judge.
type sideBySide struct {
	name string
	// keyless proves with the keyless identity instead of kiln's key.
	keyless bool
	// otherInputs proves for inputs other than those attested.
	otherInputs bool
	// absent proves an image the registry does not hold.
	absent bool
	// make writes the artifacts of d; o is the digest of another image.
	make   func(t *testing.T, d, o name.Digest) artifacts
	proven bool
}

// world is what the cases sign with.
type world struct {
	kiln, other signature.SignerVerifier
	want        trust.Inputs
	root, inter *fulcio
	stranger    *fulcio
}

const (
	keylessSubject = "kiln@example.com"
	keylessIssuer  = "https://oidc.kiln.test"
)

// keyed is kiln's signature and attestation of d made with sv.
func (w world) keyed(t *testing.T, sv signature.SignerVerifier, d name.Digest, opts ...static.Option) (oci.Signature, oci.Signature) {
	return signSimple(t, sv, d, nil, opts...), attestation(t, envelope(t, sv, ctypes.IntotoPayloadType, statement(t, d, w.want)), opts...)
}

// certified is a keyless signature and attestation of d by a certificate
// for subject and issuer from ca (its chain: chain), valid until notAfter.
func (w world) certified(t *testing.T, d name.Digest, ca *fulcio, chain []byte, subject, issuer string, notAfter time.Time) artifacts {
	leaf, sv := ca.leaf(t, subject, issuer, notAfter)
	s, a := w.keyed(t, sv, d, static.WithCertChain(leaf.pem, chain))
	return artifacts{[]oci.Signature{s}, []oci.Signature{a}}
}

func (w world) cases() []sideBySide {
	one := func(s ...oci.Signature) []oci.Signature { return s }
	later := time.Now().Add(time.Hour)
	return []sideBySide{
		{name: "kiln's signature and attestation", proven: true, make: func(t *testing.T, d, _ name.Digest) artifacts {
			s, a := w.keyed(t, w.kiln, d)
			return artifacts{one(s), one(a)}
		}},
		{name: "another key signed and attested", make: func(t *testing.T, d, _ name.Digest) artifacts {
			s, a := w.keyed(t, w.other, d)
			return artifacts{one(s), one(a)}
		}},
		{name: "kiln's signature is over another digest", make: func(t *testing.T, d, o name.Digest) artifacts {
			_, a := w.keyed(t, w.kiln, d)
			return artifacts{one(signSimple(t, w.kiln, o, nil)), one(a)}
		}},
		{name: "the signed payload was changed after signing", make: func(t *testing.T, d, _ name.Digest) artifacts {
			_, a := w.keyed(t, w.kiln, d)
			return artifacts{one(signSimple(t, w.kiln, d, append(simplePayload(t, d), ' '))), one(a)}
		}},
		{name: "the DSSE payload was changed after signing", make: func(t *testing.T, d, _ name.Digest) artifacts {
			s, _ := w.keyed(t, w.kiln, d)
			env := envelope(t, w.kiln, ctypes.IntotoPayloadType, statement(t, d, w.want))
			return artifacts{one(s), one(attestation(t, tamperDSSE(t, env, statement(t, d, otherInputs(t)))))}
		}},
		{name: "the attestation binds other inputs", otherInputs: true, make: func(t *testing.T, d, _ name.Digest) artifacts {
			s, a := w.keyed(t, w.kiln, d)
			return artifacts{one(s), one(a)}
		}},
		{name: "the attestation's subject is another digest", make: func(t *testing.T, d, o name.Digest) artifacts {
			s, _ := w.keyed(t, w.kiln, d)
			return artifacts{one(s), one(attestation(t, envelope(t, w.kiln, ctypes.IntotoPayloadType, statement(t, o, w.want))))}
		}},
		{name: "the envelope's payload type is not in-toto", make: func(t *testing.T, d, _ name.Digest) artifacts {
			s, _ := w.keyed(t, w.kiln, d)
			return artifacts{one(s), one(attestation(t, envelope(t, w.kiln, "text/plain", statement(t, d, w.want))))}
		}},
		{name: "no .sig artifact", make: func(t *testing.T, d, _ name.Digest) artifacts {
			_, a := w.keyed(t, w.kiln, d)
			return artifacts{nil, one(a)}
		}},
		{name: "no .att artifact", make: func(t *testing.T, d, _ name.Digest) artifacts {
			s, _ := w.keyed(t, w.kiln, d)
			return artifacts{one(s), nil}
		}},
		{name: "the image is not in the registry", absent: true, make: func(*testing.T, name.Digest, name.Digest) artifacts { return artifacts{} }},
		{name: "several signatures, the last kiln's", proven: true, make: func(t *testing.T, d, o name.Digest) artifacts {
			s, a := w.keyed(t, w.kiln, d)
			foreign, _ := w.keyed(t, w.other, d)
			return artifacts{one(foreign, signSimple(t, w.kiln, o, nil), s), one(a)}
		}},
		{name: "several signatures, none kiln's", make: func(t *testing.T, d, o name.Digest) artifacts {
			_, a := w.keyed(t, w.kiln, d)
			foreign, _ := w.keyed(t, w.other, d)
			return artifacts{one(foreign, signSimple(t, w.kiln, o, nil)), one(a)}
		}},
		{name: "another signer's attestation beside kiln's", proven: true, make: func(t *testing.T, d, _ name.Digest) artifacts {
			s, a := w.keyed(t, w.kiln, d)
			_, foreign := w.keyed(t, w.other, d)
			return artifacts{one(s), one(foreign, a)}
		}},
		{name: "a signature layer without its signature annotation", make: func(t *testing.T, d, _ name.Digest) artifacts {
			s, a := w.keyed(t, w.kiln, d)
			return artifacts{one(withoutSignature{s}), one(a)}
		}},
		{name: "kiln's layers carry a transparency-log bundle", proven: true, make: func(t *testing.T, d, _ name.Digest) artifacts {
			s, a := w.keyed(t, w.kiln, d, static.WithBundle(rekorBundle()))
			return artifacts{one(s), one(a)}
		}},
		{name: "the attestation's bundle annotation does not decode", make: func(t *testing.T, d, _ name.Digest) artifacts {
			s, _ := w.keyed(t, w.kiln, d)
			_, a := w.keyed(t, w.kiln, d, static.WithAnnotations(map[string]string{"dev.sigstore.cosign/bundle": `{"Payload": 5}`}))
			return artifacts{one(s), one(a)}
		}},
		{name: "a keyed signature carries an expired certificate", make: func(t *testing.T, d, _ name.Digest) artifacts {
			leaf, _ := w.root.leaf(t, keylessSubject, keylessIssuer, time.Now().Add(-time.Minute))
			s, a := w.keyed(t, w.kiln, d, static.WithCertChain(leaf.pem, w.root.pem))
			return artifacts{one(s), one(a)}
		}},
		{name: "a layer over the size limit beside kiln's signature", proven: true, make: func(t *testing.T, d, _ name.Digest) artifacts {
			s, a := w.keyed(t, w.kiln, d)
			return artifacts{one(junk(t), s), one(junk(t), a)}
		}},
		{name: "only a layer over the size limit", make: func(t *testing.T, d, _ name.Digest) artifacts {
			_, a := w.keyed(t, w.kiln, d)
			return artifacts{one(junk(t)), one(a)}
		}},
		{name: "keyless: the identity's certificate", keyless: true, proven: true, make: func(t *testing.T, d, _ name.Digest) artifacts {
			return w.certified(t, d, w.root, w.root.pem, keylessSubject, keylessIssuer, later)
		}},
		{name: "keyless: through an intermediate in the chain", keyless: true, proven: true, make: func(t *testing.T, d, _ name.Digest) artifacts {
			return w.certified(t, d, w.inter, chainPEM(w.inter, w.root), keylessSubject, keylessIssuer, later)
		}},
		{name: "keyless: another subject", keyless: true, make: func(t *testing.T, d, _ name.Digest) artifacts {
			return w.certified(t, d, w.root, w.root.pem, "mallory@example.com", keylessIssuer, later)
		}},
		{name: "keyless: another issuer", keyless: true, make: func(t *testing.T, d, _ name.Digest) artifacts {
			return w.certified(t, d, w.root, w.root.pem, keylessSubject, "https://oidc.mallory.test", later)
		}},
		{name: "keyless: a root kiln does not trust", keyless: true, make: func(t *testing.T, d, _ name.Digest) artifacts {
			return w.certified(t, d, w.stranger, w.stranger.pem, keylessSubject, keylessIssuer, later)
		}},
		{name: "keyless: an expired certificate", keyless: true, make: func(t *testing.T, d, _ name.Digest) artifacts {
			return w.certified(t, d, w.root, w.root.pem, keylessSubject, keylessIssuer, time.Now().Add(-time.Minute))
		}},
		{name: "keyless: a keyed signature", keyless: true, make: func(t *testing.T, d, _ name.Digest) artifacts {
			s, a := w.keyed(t, w.kiln, d)
			return artifacts{one(s), one(a)}
		}},
	}
}

// junk is a layer over MaxAttachmentSize, as anyone with push access can
// add beside kiln's.
func junk(t *testing.T) oci.Signature {
	t.Helper()
	s, err := static.NewSignature(make([]byte, proof.MaxAttachmentSize+1), "junk")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestProofAnswersAsCosign writes each case's artifacts to an in-process
// registry and checks that Prove accepts exactly the cases cosign's own
// verification (the proof as kiln made it with cosign, and cosign's
// VerifyImageSignatures and VerifyImageAttestations with the same
// CheckOpts) accepts, with the same error text, so the REUSE_REJECTED
// reasons read as before; and that VerifyAttachments returns the
// attestations cosign verifies.
func TestProofAnswersAsCosign(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := t.Context()
	r := registry.Remote{Insecure: []string{host}}
	kiln, other := newKeys(t, "pw"), newKeys(t, "pw2")
	root := newCA(t, "kiln test fulcio", nil)
	w := world{kiln: signerOf(t, kiln), other: signerOf(t, other), want: testInputs(t, host),
		root: root, inter: newCA(t, "kiln test fulcio intermediate", root), stranger: newCA(t, "another fulcio", nil)}
	keyed := trust.Identity{PublicKey: kiln.pub}
	keyless := trust.Identity{Roots: root.pem, Subject: keylessSubject, Issuer: keylessIssuer}
	for i, tc := range w.cases() {
		t.Run(tc.name, func(t *testing.T) {
			repo := fmt.Sprintf("side/case%d", i)
			d, o := digestOf(t, pushImage(t, host, repo+":a")), digestOf(t, pushImage(t, host, repo+":b"))
			if tc.absent {
				d = absentDigest(t, host+"/"+repo)
			}
			if a := tc.make(t, d, o); a.sigs != nil || a.atts != nil {
				attach(t, d, a.sigs, a.atts)
			}
			id, want := keyed, w.want
			if tc.keyless {
				id = keyless
			}
			if tc.otherInputs {
				want = otherInputs(t)
			}
			got, ref := proof.Prove(ctx, r, d, id, want), cosignProve(ctx, r, d, id, want)
			if (got == nil) != tc.proven {
				t.Errorf("Prove: %v, want proven %v", got, tc.proven)
			}
			if diff := cmp.Diff(errText(ref), errText(got)); diff != "" {
				t.Errorf("Prove's error differs from cosign's verification (-cosign +proof):\n%s", diff)
			}
			if errors.Is(got, trust.ErrNotProven) != errors.Is(ref, trust.ErrNotProven) || errors.Is(got, registry.ErrNotFound) != errors.Is(ref, registry.ErrNotFound) {
				t.Errorf("Prove's error wraps differently: %v, cosign's %v", got, ref)
			}
			compareAttachments(ctx, t, r, d, id)
		})
	}
}

// compareAttachments checks VerifyAttachments against cosign's
// VerifyImageSignatures and VerifyImageAttestations with CheckOpts: the
// same accept or reject, and the same verified attestations.
func compareAttachments(ctx context.Context, t *testing.T, r registry.Remote, d name.Digest, id trust.Identity) {
	t.Helper()
	co, err := sign.CheckOpts(ctx, r, id)
	if err != nil {
		t.Fatal(err)
	}
	_, _, sigErr := cosign.VerifyImageSignatures(ctx, d, co)
	co.ClaimVerifier = cosign.IntotoSubjectClaimVerifier
	cosignAtts, _, attErr := cosign.VerifyImageAttestations(ctx, d, co)
	c, err := proof.CheckOpts(ctx, r, id)
	if err != nil {
		t.Fatal(err)
	}
	atts, err := proof.VerifyAttachments(ctx, d, c)
	if cosignOK := sigErr == nil && attErr == nil; cosignOK != (err == nil) {
		t.Fatalf("VerifyAttachments: %v; cosign: signatures %v, attestations %v", err, sigErr, attErr)
	}
	if err != nil {
		return
	}
	var want, got []string
	for _, a := range cosignAtts {
		h, err := a.Digest()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, h.String())
	}
	for _, a := range atts {
		got = append(got, a.Digest().String())
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verified attestations differ (-cosign +proof):\n%s", diff)
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func digestOf(t *testing.T, s string) name.Digest {
	t.Helper()
	d, err := name.NewDigest(s, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// absentDigest names in repo an image never pushed.
func absentDigest(t *testing.T, repo string) name.Digest {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	h, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return digestOf(t, repo+"@"+h.String())
}

// otherInputs are a node image's inputs for another pool.
func otherInputs(t *testing.T) trust.Inputs {
	t.Helper()
	in, err := trust.NodeImage{Pool: "infra", RenderedName: "rendered-infra-1", RenderedHash: "sha256:" + strings.Repeat("b", 64),
		BaseImage: "registry.example/base/os@sha256:" + strings.Repeat("c", 64), Source: "s", Builder: "fast"}.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	return in
}
