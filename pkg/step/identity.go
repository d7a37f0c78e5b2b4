package step

import (
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/pkg/trust"
)

// IdentityOptions say which signer's attestations prove a registry object
// was built by kiln: the cosign public key, or the keyless certificate
// identity, issuer and roots.
type IdentityOptions struct{ PublicKey, CertificateIdentity, CertificateOIDCIssuer, CertificateRoots string }

// AddFlags registers the identity flags.
func (o *IdentityOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.PublicKey, "public-key", "/etc/kiln/signing/cosign.pub", "cosign public key whose attestations prove reuse (a missing file means nothing is reused)")
	fs.StringVar(&o.CertificateIdentity, "certificate-identity", "", "keyless: the certificate identity (SAN) whose attestations prove reuse")
	fs.StringVar(&o.CertificateOIDCIssuer, "certificate-oidc-issuer", "", "keyless: the OIDC issuer of --certificate-identity")
	fs.StringVar(&o.CertificateRoots, "certificate-roots", "", "keyless: PEM file with the Fulcio root and intermediate certificates")
}

// Files say where the identity is mounted.
func (o IdentityOptions) Files() trust.IdentityFiles {
	return trust.IdentityFiles{PublicKey: o.PublicKey, Roots: o.CertificateRoots, Subject: o.CertificateIdentity, Issuer: o.CertificateOIDCIssuer}
}
