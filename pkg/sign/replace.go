package sign

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/asn1"
	"fmt"
	"slices"

	"github.com/sigstore/cosign/v2/pkg/oci"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"

	"github.com/kiln-dev/kiln/pkg/sign/proof"
)

// ownReplace is the mutate.ReplaceOp of kiln's attestations: a new run's
// provenance replaces the earlier provenance of the same predicate type
// signed by the same identity, and nothing else. cosign's own
// NewReplaceOp drops every attestation of the predicate type, which would
// delete another key's (a rotated key's, or Tekton Chains') and leave
// `cosign verify-attestation` with that key finding nothing.
type ownReplace struct {
	predicateType string
	// verifier checks an attestation's DSSE signature with the signer's
	// public key (key-based signing).
	verifier signature.Verifier
	// cert is the signing certificate (keyless): an attestation whose
	// certificate names the same identity is ours, whatever its
	// ephemeral key.
	cert *x509.Certificate
}

var _ mutate.ReplaceOp = ownReplace{}

// newOwnReplace makes the replace op of the signer sv; certPEM is its
// Fulcio certificate when keyless.
func newOwnReplace(predicateType string, sv signature.Verifier, certPEM []byte) (ownReplace, error) {
	r := ownReplace{predicateType: predicateType, verifier: sv}
	if len(certPEM) > 0 {
		certs, err := cryptoutils.UnmarshalCertificatesFromPEM(certPEM)
		if err != nil || len(certs) == 0 {
			return r, fmt.Errorf("reading the signing certificate: %v", err)
		}
		r.cert, r.verifier = certs[0], nil
	}
	return r, nil
}

// Replace keeps every attestation that is not ours and puts att first.
func (r ownReplace) Replace(existing oci.Signatures, att oci.Signature) (oci.Signatures, error) {
	list, err := existing.Get()
	if err != nil {
		return nil, err
	}
	out := []oci.Signature{att}
	for _, s := range list {
		if !r.ours(s) {
			out = append(out, s)
		}
	}
	return signatureList{Signatures: existing, list: out}, nil
}

// ours reports whether s is a DSSE attestation of r's predicate type
// whose signature verifies with r's identity. Anything unreadable is not
// ours, so it is kept.
func (r ownReplace) ours(s oci.Signature) bool {
	envelope, err := s.Payload()
	if err != nil {
		return false
	}
	v := r.verifier
	if r.cert != nil {
		c, err := s.Cert()
		if err != nil || c == nil || !sameIdentity(c, r.cert) {
			return false
		}
		if v, err = signature.LoadVerifier(c.PublicKey, crypto.SHA256); err != nil {
			return false
		}
	}
	if v == nil || dsse.WrapVerifier(v).VerifySignature(bytes.NewReader(envelope), nil) != nil {
		return false
	}
	st, err := proof.StatementOf(s)
	return err == nil && st.PredicateType == r.predicateType
}

// Fulcio's OIDC issuer extensions (v1 raw string, v2 DER UTF8String).
var (
	oidIssuerV1 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
	oidIssuerV2 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
)

// sameIdentity compares two Fulcio certificates' identities: subject
// alternative names and OIDC issuer.
func sameIdentity(a, b *x509.Certificate) bool {
	if !slices.Equal(cryptoutils.GetSubjectAlternateNames(a), cryptoutils.GetSubjectAlternateNames(b)) {
		return false
	}
	ext := func(c *x509.Certificate) [][]byte {
		var out [][]byte
		for _, e := range c.Extensions {
			if e.Id.Equal(oidIssuerV1) || e.Id.Equal(oidIssuerV2) {
				out = append(out, e.Value)
			}
		}
		return out
	}
	ea, eb := ext(a), ext(b)
	return len(ea) > 0 && slices.EqualFunc(ea, eb, bytes.Equal)
}

// signatureList is existing with its list replaced, the shape
// mutate.ReplaceSignatures takes.
type signatureList struct {
	oci.Signatures
	list []oci.Signature
}

func (l signatureList) Get() ([]oci.Signature, error) { return l.list, nil }
