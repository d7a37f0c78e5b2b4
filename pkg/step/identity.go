package step

import (
	"fmt"

	"github.com/kiln-dev/kiln/pkg/trust"
)

// DefaultPublicKey is where kiln's cosign public key is read from unless
// --public-key names another file; the Tasks pass the public-key
// workspace's cosign.pub. One default for every command that checks
// kiln's identity (image-build, kmod-build, kmod-sign, verify, rollout).
const DefaultPublicKey = "/etc/kiln/signing/cosign.pub"

// IdentityOptions name the signer kiln trusts as itself, with cosign's
// flag names: a public key, or a keyless certificate identity and issuer
// with the Fulcio roots. Every stage that proves a registry object
// (image-build and kmod reuse, verify) uses these flags, so the identity
// that signs is the identity that is checked.
type IdentityOptions struct {
	// PublicKey is a cosign.pub file. A path whose file does not exist
	// means no key (an unbound optional workspace).
	PublicKey string
	// CertificateIdentity, CertificateOIDCIssuer and CertificateRoots
	// select keyless verification.
	CertificateIdentity   string
	CertificateOIDCIssuer string
	CertificateRoots      string
}

// DefaultIdentityOptions returns the identity options with their defaults.
func DefaultIdentityOptions() IdentityOptions { return IdentityOptions{PublicKey: DefaultPublicKey} }

// Validate refuses a half-configured keyless identity.
func (o *IdentityOptions) Validate() error {
	keyless := o.CertificateIdentity != "" || o.CertificateOIDCIssuer != "" || o.CertificateRoots != ""
	if keyless && (o.CertificateIdentity == "" || o.CertificateOIDCIssuer == "" || o.CertificateRoots == "") {
		return fmt.Errorf("keyless identity: --certificate-identity, --certificate-oidc-issuer and --certificate-roots are all required")
	}
	return nil
}

// Files says where the identity is read from. With keyless flags set the
// public key is left out: an identity is one or the other.
func (o *IdentityOptions) Files() trust.IdentityFiles {
	if o.CertificateRoots != "" {
		return trust.IdentityFiles{Roots: o.CertificateRoots, Subject: o.CertificateIdentity, Issuer: o.CertificateOIDCIssuer}
	}
	return trust.IdentityFiles{PublicKey: o.PublicKey}
}
