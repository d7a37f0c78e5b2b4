package proof

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	intoto "github.com/in-toto/in-toto-golang/in_toto"
	ssldsse "github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	"github.com/sigstore/sigstore/pkg/signature/options"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// Checks are what a cosign signature or attestation must pass: cosign's
// CheckOpts as kiln sets them, with the transparency log and SCT not
// required (`cosign verify --insecure-ignore-tlog`).
type Checks struct {
	// Remote reads the image and its artifacts.
	Remote registry.Remote
	// Key is the keyed identity's verifier; nil for a keyless identity.
	Key signature.Verifier
	// Roots, Subject and Issuer are the keyless identity: a certificate
	// chaining to Roots for exactly Subject (a SAN) from exactly Issuer
	// (the Fulcio OIDC issuer extension).
	Roots           *x509.CertPool
	Subject, Issuer string
}

// intotoPayloadType is the DSSE payload type of an in-toto statement,
// the only one cosign accepts in an attestation.
const intotoPayloadType = "application/vnd.in-toto+json"

// oidcIssuerOID is Fulcio's OIDC issuer extension as cosign reads it
// (https://github.com/sigstore/fulcio/blob/main/docs/oid-info.md).
const oidcIssuerOID = "1.3.6.1.4.1.57264.1.1"

// verifySignature is cosign's VerifyImageSignature with kiln's options:
// the signature annotation over the layer's simple-signing payload, and
// the payload's claim that it is about h.
func (c *Checks) verifySignature(ctx context.Context, s Attestation, h v1.Hash) error {
	return c.verify(s, func(v signature.Verifier) error {
		b64, err := s.base64Signature()
		if err != nil {
			return err
		}
		sig, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return err
		}
		p, err := s.Payload()
		if err != nil {
			return err
		}
		if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(p), options.WithContext(ctx)); err != nil {
			return err
		}
		return simpleClaim(p, h)
	})
}

// verifyAttestation is cosign's VerifyImageAttestation for one layer: the
// layer decodes as cosign copies it, its DSSE envelope holds an in-toto
// statement signed by the identity, and a subject of the statement is h.
func (c *Checks) verifyAttestation(ctx context.Context, a Attestation, h v1.Hash) error {
	if err := a.decodes(); err != nil {
		return err
	}
	return c.verify(a, func(v signature.Verifier) error {
		p, err := a.Payload()
		if err != nil {
			return err
		}
		var env ssldsse.Envelope
		if err := json.Unmarshal(p, &env); err != nil {
			return err
		}
		if env.PayloadType != intotoPayloadType {
			return fmt.Errorf("invalid payloadType %s on envelope. Expected %s", env.PayloadType, intotoPayloadType)
		}
		dv, err := ssldsse.NewEnvelopeVerifier(&dsse.VerifierAdapter{SignatureVerifier: v})
		if err != nil {
			return err
		}
		if _, err := dv.Verify(ctx, &env); err != nil {
			return err
		}
		return subjectClaim(env, h)
	})
}

// decodes is what cosign's static.Copy reads of an attestation layer
// before verifying it: the content, the signature annotation (unused by
// DSSE, yet required), the bundle and timestamp annotations and the
// certificates. A layer where one of them does not decode is rejected.
func (a Attestation) decodes() error {
	if _, err := a.Payload(); err != nil {
		return err
	}
	if _, err := a.base64Signature(); err != nil {
		return err
	}
	if err := a.decodeExtras(); err != nil {
		return err
	}
	cert, err := a.cert()
	if err != nil || cert == nil {
		return err
	}
	_, err = a.chain()
	return err
}

// verify runs cosign's verification flow around check, which verifies
// the layer's signature with the verifier it is given: the key's, or a
// certificate's that passes the keyless identity. A certificate on the
// layer must be valid now, as in cosign without a timestamp.
func (c *Checks) verify(l Attestation, check func(signature.Verifier) error) error {
	v := c.Key
	if v == nil {
		var err error
		if v, err = c.certVerifier(l); err != nil {
			return err
		}
	}
	if err := check(v); err != nil {
		return err
	}
	cert, err := l.cert()
	if err != nil {
		return err
	}
	if now := time.Now(); cert != nil && (cert.NotAfter.Before(now) || cert.NotBefore.After(now)) {
		return errors.New("expected a signed timestamp to verify an expired certificate")
	}
	return nil
}

// certVerifier is the verifier of the layer's certificate once the
// certificate chains to Roots (through the layer's chain) and names
// Subject and Issuer: cosign's ValidateAndUnpackCert without SCT.
func (c *Checks) certVerifier(l Attestation) (signature.Verifier, error) {
	cert, err := l.cert()
	if err != nil {
		return nil, err
	}
	if cert == nil {
		return nil, errors.New("no certificate found on signature")
	}
	chain, err := l.chain()
	if err != nil {
		return nil, err
	}
	var intermediates *x509.CertPool
	if len(chain) > 1 {
		// The chain's last certificate is its root: only Roots are
		// trusted as one.
		intermediates = x509.NewCertPool()
		for _, ic := range chain[:len(chain)-1] {
			intermediates.AddCert(ic)
		}
	}
	v, err := signature.LoadVerifier(cert.PublicKey, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("invalid certificate found on signature: %w", err)
	}
	if err := c.trusted(cert, intermediates); err != nil {
		return nil, err
	}
	return v, c.identityMatches(cert)
}

// trusted checks that cert chains to Roots for code signing. As in
// cosign, the chain is checked at the certificate's issuance (its expiry
// is checked after the signature), and Fulcio's critical SAN extension of
// an OtherName (which Go does not handle) does not fail it.
func (c *Checks) trusted(cert *x509.Certificate, intermediates *x509.CertPool) error {
	var unhandled []asn1.ObjectIdentifier
	for _, oid := range cert.UnhandledCriticalExtensions {
		if !oid.Equal(cryptoutils.SANOID) {
			unhandled = append(unhandled, oid)
		}
	}
	cert.UnhandledCriticalExtensions = unhandled
	_, err := cert.Verify(x509.VerifyOptions{
		CurrentTime: cert.NotBefore, Roots: c.Roots, Intermediates: intermediates,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	})
	if err != nil {
		return fmt.Errorf("cert verification failed: %w. Check your TUF root (see cosign initialize) or set a custom root with env var SIGSTORE_ROOT_FILE", err)
	}
	return nil
}

// identityMatches checks the certificate's OIDC issuer extension and
// its SANs against Issuer and Subject, exactly.
func (c *Checks) identityMatches(cert *x509.Certificate) error {
	issuer := ""
	for _, ext := range cert.Extensions {
		if ext.Id.String() == oidcIssuerOID {
			issuer = string(ext.Value)
		}
	}
	sans := cryptoutils.GetSubjectAlternateNames(cert)
	issuerOK := c.Issuer == "" || c.Issuer == issuer
	subjectOK := c.Subject == ""
	for _, san := range sans {
		subjectOK = subjectOK || san == c.Subject
	}
	if issuerOK && subjectOK {
		return nil
	}
	return fmt.Errorf("none of the expected identities matched what was in the certificate, got subjects [%s] with issuer %s", strings.Join(sans, ", "), issuer)
}

// simpleClaim is cosign's SimpleClaimVerifier: the simple-signing
// payload names h as the signed manifest digest.
func simpleClaim(p []byte, h v1.Hash) error {
	var ss payload.SimpleContainerImage
	if err := json.Unmarshal(p, &ss); err != nil {
		return err
	}
	if got := ss.Critical.Image.DockerManifestDigest; got != h.String() {
		return fmt.Errorf("invalid or missing digest in claim: %s", got)
	}
	return nil
}

// subjectClaim is cosign's IntotoSubjectClaimVerifier: a sha256 subject
// of the envelope's in-toto statement is h.
func subjectClaim(env ssldsse.Envelope, h v1.Hash) error {
	raw, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return err
	}
	var st intoto.Statement
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	for _, s := range st.Subject {
		if d, ok := s.Digest["sha256"]; ok && "sha256:"+d == h.String() {
			return nil
		}
	}
	return errors.New("no matching subject digest found")
}
