package trust

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Identity is the signer kiln trusts as itself: the cosign public key, or
// the keyless identity (a Fulcio certificate for Subject issued by the OIDC
// Issuer, chaining to Roots). Only a signature from this identity, over the
// digest, makes a registry object reusable.
type Identity struct {
	// PublicKey is a cosign public key, PEM.
	PublicKey []byte
	// Roots are the Fulcio root (and intermediate) certificates, PEM.
	Roots []byte
	// Subject and Issuer are the certificate's identity (SAN) and OIDC
	// issuer, matched exactly.
	Subject, Issuer string
}

// ErrNoIdentity says no identity was configured: nothing can be proven, so
// nothing is reused.
var ErrNoIdentity = errors.New("no signing identity configured (public key, or keyless roots, subject and issuer)")

// IsZero reports whether no identity is configured.
func (id Identity) IsZero() bool { return len(id.PublicKey) == 0 && len(id.Roots) == 0 }

// Keyless reports whether the identity is a certificate identity.
func (id Identity) Keyless() bool { return len(id.PublicKey) == 0 && len(id.Roots) > 0 }

// Validate checks that the identity is complete and parses.
func (id Identity) Validate() error {
	switch {
	case id.IsZero():
		return ErrNoIdentity
	case len(id.PublicKey) > 0 && len(id.Roots) > 0:
		return fmt.Errorf("identity: both a public key and keyless roots are set; configure one")
	case len(id.PublicKey) > 0:
		if _, err := cryptoutils.UnmarshalPEMToPublicKey(id.PublicKey); err != nil {
			return fmt.Errorf("identity: reading the public key: %w", err)
		}
	default:
		if id.Subject == "" || id.Issuer == "" {
			return fmt.Errorf("identity: keyless needs both the certificate identity and its OIDC issuer")
		}
		if _, err := cryptoutils.UnmarshalCertificatesFromPEM(id.Roots); err != nil {
			return fmt.Errorf("identity: reading the keyless root certificates: %w", err)
		}
	}
	return nil
}

// RootPool is the keyless roots as a certificate pool.
func (id Identity) RootPool() (*x509.CertPool, error) {
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM(id.Roots)
	if err != nil {
		return nil, fmt.Errorf("identity: reading the keyless root certificates: %w", err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// String names the identity without secrets: the public key's sha256, or
// the keyless subject and issuer.
func (id Identity) String() string {
	switch {
	case len(id.PublicKey) > 0:
		sum := sha256.Sum256(id.PublicKey)
		return "cosign key sha256:" + hex.EncodeToString(sum[:8])
	case len(id.Roots) > 0:
		return fmt.Sprintf("keyless %s (issuer %s)", id.Subject, id.Issuer)
	}
	return "no identity"
}

// IdentityFiles say where the identity is mounted (a Task workspace).
type IdentityFiles struct {
	// PublicKey is a cosign.pub file. A path whose file does not exist
	// means no key: Tekton turns an unbound optional workspace's path into
	// "", so the flag becomes "/cosign.pub".
	PublicKey string
	// Roots, Subject and Issuer select keyless verification.
	Roots, Subject, Issuer string
}

// Load reads the identity. A missing public key file with no keyless
// settings gives the zero Identity (reuse is then never proven); a file
// that exists but does not parse is an error.
func (f IdentityFiles) Load() (Identity, error) {
	var id Identity
	if f.PublicKey != "" {
		b, err := os.ReadFile(f.PublicKey)
		switch {
		case err == nil:
			id.PublicKey = b
		case !errors.Is(err, os.ErrNotExist):
			return Identity{}, fmt.Errorf("reading the public key %s: %w", f.PublicKey, err)
		}
	}
	if f.Roots != "" {
		b, err := os.ReadFile(f.Roots)
		if err != nil {
			return Identity{}, fmt.Errorf("reading the keyless roots %s: %w", f.Roots, err)
		}
		id.Roots, id.Subject, id.Issuer = b, f.Subject, f.Issuer
	}
	if id.IsZero() {
		return id, nil
	}
	return id, id.Validate()
}
