package proof_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	cbundle "github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	"github.com/sigstore/cosign/v2/pkg/oci"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	ctypes "github.com/sigstore/cosign/v2/pkg/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	sigpayload "github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/kiln-dev/kiln/pkg/trust"
)

// The helpers below write cosign signature and attestation artifacts
// with cosign's own libraries, as `cosign sign` and `cosign attest` do,
// including artifacts a signer would never write (tampered, mismatched)
// that a verifier must refuse.

// signerOf loads a cosign key pair's private key.
func signerOf(t *testing.T, k keyPair) signature.SignerVerifier {
	t.Helper()
	sv, err := cosign.LoadPrivateKey(k.priv, k.pass, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sv
}

// simplePayload is cosign's simple-signing payload naming d.
func simplePayload(t *testing.T, d name.Digest) []byte {
	t.Helper()
	p, err := (&sigpayload.Cosign{Image: d}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// signSimple signs the simple-signing payload naming about and returns
// the signature layer, with its content replaced by payload when payload
// is not nil (a payload changed after signing).
func signSimple(t *testing.T, sv signature.Signer, about name.Digest, payload []byte, opts ...static.Option) oci.Signature {
	t.Helper()
	p := simplePayload(t, about)
	raw, err := sv.SignMessage(bytes.NewReader(p))
	if err != nil {
		t.Fatal(err)
	}
	if payload != nil {
		p = payload
	}
	s, err := static.NewSignature(p, base64.StdEncoding.EncodeToString(raw), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// statement is kiln's provenance statement that subject was built from in.
func statement(t *testing.T, subject name.Digest, in trust.Inputs) []byte {
	t.Helper()
	st, err := trust.Statement(subject, in, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// envelope is the DSSE envelope of st signed by sv with payloadType.
func envelope(t *testing.T, sv signature.SignerVerifier, payloadType string, st []byte) []byte {
	t.Helper()
	env, err := dsse.WrapSigner(sv, payloadType).SignMessage(bytes.NewReader(st))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// attestation is the attestation layer holding env.
func attestation(t *testing.T, env []byte, opts ...static.Option) oci.Signature {
	t.Helper()
	opts = append([]static.Option{static.WithLayerMediaType(ctypes.DssePayloadType)}, opts...)
	a, err := static.NewAttestation(env, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// tamperDSSE replaces the statement in env, keeping its signatures.
func tamperDSSE(t *testing.T, env, st []byte) []byte {
	t.Helper()
	var e map[string]any
	if err := json.Unmarshal(env, &e); err != nil {
		t.Fatal(err)
	}
	e["payload"] = base64.StdEncoding.EncodeToString(st)
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withoutSignature is a signature layer missing its signature annotation.
type withoutSignature struct{ sig oci.Signature }

func (w withoutSignature) Annotations() (map[string]string, error) {
	a, err := w.sig.Annotations()
	out := map[string]string{}
	for k, v := range a {
		if k != "dev.cosignproject.cosign/signature" {
			out[k] = v
		}
	}
	return out, err
}

func (w withoutSignature) Digest() (v1.Hash, error)              { return w.sig.Digest() }
func (w withoutSignature) DiffID() (v1.Hash, error)              { return w.sig.DiffID() }
func (w withoutSignature) Compressed() (io.ReadCloser, error)    { return w.sig.Compressed() }
func (w withoutSignature) Uncompressed() (io.ReadCloser, error)  { return w.sig.Uncompressed() }
func (w withoutSignature) Size() (int64, error)                  { return w.sig.Size() }
func (w withoutSignature) MediaType() (types.MediaType, error)   { return w.sig.MediaType() }
func (w withoutSignature) Payload() ([]byte, error)              { return w.sig.Payload() }
func (w withoutSignature) Signature() ([]byte, error)            { return w.sig.Signature() }
func (w withoutSignature) Base64Signature() (string, error)      { return w.sig.Base64Signature() }
func (w withoutSignature) Cert() (*x509.Certificate, error)      { return w.sig.Cert() }
func (w withoutSignature) Chain() ([]*x509.Certificate, error)   { return w.sig.Chain() }
func (w withoutSignature) Bundle() (*cbundle.RekorBundle, error) { return w.sig.Bundle() }
func (w withoutSignature) RFC3161Timestamp() (*cbundle.RFC3161Timestamp, error) {
	return w.sig.RFC3161Timestamp()
}

// attach writes sigs and atts as d's .sig and .att artifacts; a nil list
// writes no artifact at all.
func attach(t *testing.T, d name.Digest, sigs, atts []oci.Signature) {
	t.Helper()
	se, err := ociremote.SignedEntity(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sigs {
		if se, err = mutate.AttachSignatureToEntity(se, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range atts {
		if se, err = mutate.AttachAttestationToEntity(se, a); err != nil {
			t.Fatal(err)
		}
	}
	if sigs != nil {
		if err := ociremote.WriteSignatures(d.Repository, se); err != nil {
			t.Fatal(err)
		}
	}
	if atts != nil {
		if err := ociremote.WriteAttestations(d.Repository, se); err != nil {
			t.Fatal(err)
		}
	}
}

// rekorBundle is a well-formed transparency-log bundle (not from a log
// kiln checks: the proof does not require one).
func rekorBundle() *cbundle.RekorBundle {
	return &cbundle.RekorBundle{SignedEntryTimestamp: []byte("set"),
		Payload: cbundle.RekorPayload{Body: "Ym9keQ==", IntegratedTime: time.Now().Unix(), LogIndex: 7, LogID: "log"}}
}

// fulcio is a certificate authority issuing Fulcio-like code-signing
// certificates: the identity as an email SAN, the OIDC issuer in Fulcio's
// extension 1.3.6.1.4.1.57264.1.1.
type fulcio struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	pem  []byte
}

var oidcIssuerExt = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}

// newCA makes a CA certificate, self-signed when parent is nil.
func newCA(t *testing.T, cn string, parent *fulcio) *fulcio {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-3 * time.Hour), NotAfter: time.Now().Add(3 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	issuer, signer := tmpl, key
	if parent != nil {
		issuer, signer = parent.cert, parent.key
	}
	return certify(t, tmpl, issuer, &key.PublicKey, signer, key)
}

func certify(t *testing.T, tmpl, issuer *x509.Certificate, pub *ecdsa.PublicKey, signer, key *ecdsa.PrivateKey) *fulcio {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, pub, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cryptoutils.MarshalCertificateToPEM(cert)
	if err != nil {
		t.Fatal(err)
	}
	return &fulcio{key: key, cert: cert, pem: p}
}

// leaf issues a code-signing certificate for subject from issuer, valid
// until notAfter, and returns it with a signer for its key.
func (ca *fulcio) leaf(t *testing.T, subject, issuer string, notAfter time.Time) (*fulcio, signature.SignerVerifier) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		EmailAddresses:  []string{subject},
		ExtraExtensions: []pkix.Extension{{Id: oidcIssuerExt, Value: []byte(issuer)}}}
	l := certify(t, tmpl, ca.cert, &key.PublicKey, ca.key, key)
	sv, err := signature.LoadECDSASignerVerifier(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return l, sv
}

// chainPEM is the PEM of certificates, leaf's issuer first.
func chainPEM(cas ...*fulcio) []byte {
	var b []byte
	for _, c := range cas {
		b = append(b, c.pem...)
	}
	return b
}
