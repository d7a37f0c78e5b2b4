package sign

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/sigstore/cosign/v2/pkg/cosign"
	cbundle "github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/fulcio/pkg/api"
	rekorclient "github.com/sigstore/rekor/pkg/client"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// keylessSigner is an ephemeral key with a Fulcio certificate for the
// identity in an OIDC token: what `cosign sign` does without --key,
// written against the Fulcio and Rekor client libraries because cosign's
// own keyless signer lives in its CLI packages.
type keylessSigner struct {
	signature.SignerVerifier
	cert, chain []byte
	rekorURL    string
}

// newKeylessSigner asks Fulcio for a certificate. The token is read from a
// file (a projected ServiceAccount token in a Tekton pod) and never logged.
func newKeylessSigner(o KeylessOptions) (*keylessSigner, error) {
	raw, err := os.ReadFile(o.IDTokenPath)
	if err != nil {
		return nil, fmt.Errorf("keyless: reading the identity token: %w", err)
	}
	token := strings.TrimSpace(string(raw))
	subject, err := tokenSubject(token)
	if err != nil {
		return nil, err
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sv, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		return nil, err
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(priv.Public())
	if err != nil {
		return nil, err
	}
	// Proof of possession: the subject signed with the key being certified.
	sum := sha256.Sum256([]byte(subject))
	proof, err := ecdsa.SignASN1(rand.Reader, priv, sum[:])
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(o.FulcioURL)
	if err != nil {
		return nil, fmt.Errorf("keyless: Fulcio URL %q: %w", o.FulcioURL, err)
	}
	resp, err := api.NewClient(u, api.WithUserAgent("kiln")).SigningCert(api.CertificateRequest{
		PublicKey: api.Key{Content: pub, Algorithm: "ecdsa"}, SignedEmailAddress: proof,
	}, token)
	if err != nil {
		return nil, fmt.Errorf("keyless: getting a certificate from Fulcio %s for %q: %w", o.FulcioURL, subject, err)
	}
	return &keylessSigner{SignerVerifier: sv, cert: resp.CertPEM, chain: resp.ChainPEM, rekorURL: o.RekorURL}, nil
}

// tokenSubject reads the identity Fulcio certifies from an OIDC token:
// the email claim when present, else sub. The signature of the token is
// Fulcio's to check.
func tokenSubject(token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("keyless: the identity token is not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return "", fmt.Errorf("keyless: decoding the identity token's claims: %w", err)
	}
	var claims struct {
		Email   string `json:"email"`
		Subject string `json:"sub"`
	}
	if err := json.Unmarshal(b, &claims); err != nil {
		return "", fmt.Errorf("keyless: decoding the identity token's claims: %w", err)
	}
	if claims.Email != "" {
		return claims.Email, nil
	}
	if claims.Subject == "" {
		return "", fmt.Errorf("keyless: the identity token has neither email nor sub")
	}
	return claims.Subject, nil
}

// signatureOptions attach the certificate and, when a Rekor URL is set,
// the transparency-log bundle of an uploaded signature. Without Rekor the
// signature verifies only where the tlog check is turned off, as with
// `cosign sign --tlog-upload=false`.
func (k *keylessSigner) signatureOptions(ctx context.Context, payload, sig []byte) ([]static.Option, error) {
	opts := []static.Option{static.WithCertChain(k.cert, k.chain)}
	if k.rekorURL == "" {
		return opts, nil
	}
	rc, err := rekorclient.GetRekorClient(k.rekorURL, rekorclient.WithUserAgent("kiln"))
	if err != nil {
		return nil, fmt.Errorf("keyless: Rekor %s: %w", k.rekorURL, err)
	}
	h := sha256.New()
	h.Write(payload)
	entry, err := cosign.TLogUpload(ctx, rc, sig, h, k.cert)
	if err != nil {
		return nil, fmt.Errorf("keyless: uploading the signature to Rekor %s: %w", k.rekorURL, err)
	}
	return append(opts, static.WithBundle(cbundle.EntryToBundle(entry))), nil
}

// attestationOptions do the same for a DSSE envelope.
func (k *keylessSigner) attestationOptions(ctx context.Context, envelope []byte) ([]static.Option, error) {
	opts := []static.Option{static.WithCertChain(k.cert, k.chain)}
	if k.rekorURL == "" {
		return opts, nil
	}
	rc, err := rekorclient.GetRekorClient(k.rekorURL, rekorclient.WithUserAgent("kiln"))
	if err != nil {
		return nil, fmt.Errorf("keyless: Rekor %s: %w", k.rekorURL, err)
	}
	entry, err := cosign.TLogUploadDSSEEnvelope(ctx, rc, envelope, k.cert)
	if err != nil {
		return nil, fmt.Errorf("keyless: uploading the attestation to Rekor %s: %w", k.rekorURL, err)
	}
	return append(opts, static.WithBundle(cbundle.EntryToBundle(entry))), nil
}
