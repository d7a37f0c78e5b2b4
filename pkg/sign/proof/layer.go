package proof

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/kiln-dev/kiln/pkg/sign/proof/internal/bundle"
)

// The annotations of a cosign signature layer, as cosign writes and reads
// them:
// https://github.com/sigstore/cosign/blob/v2.6.5/pkg/oci/internal/signature/layer.go
const (
	sigKey       = "dev.cosignproject.cosign/signature"
	certKey      = "dev.sigstore.cosign/certificate"
	chainKey     = "dev.sigstore.cosign/chain"
	bundleKey    = "dev.sigstore.cosign/bundle"
	timestampKey = "dev.sigstore.cosign/rfc3161timestamp"
)

// Attestation is one layer of a signature (.sig) or attestation (.att)
// artifact: its descriptor, with the annotations, and its content.
type Attestation struct {
	desc  v1.Descriptor
	layer v1.Layer
}

// Digest is the layer's digest.
func (a Attestation) Digest() v1.Hash { return a.desc.Digest }

// Payload reads the layer's content: the signed payload, or the DSSE
// envelope of an attestation. The registry's bytes are checked against
// the digest by go-containerregistry and never read past
// MaxAttachmentSize.
func (a Attestation) Payload() ([]byte, error) {
	if a.desc.Size > MaxAttachmentSize {
		return nil, fmt.Errorf("layer %s: %d bytes, over the %d-byte limit", a.desc.Digest, a.desc.Size, MaxAttachmentSize)
	}
	// Compressed is the blob as stored: cosign does not compress its
	// layers.
	rc, err := a.layer.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxAttachmentSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxAttachmentSize {
		return nil, fmt.Errorf("layer %s: over the %d-byte limit", a.desc.Digest, MaxAttachmentSize)
	}
	return b, nil
}

// base64Signature is the signature annotation; its absence is an error
// in cosign's words.
func (a Attestation) base64Signature() (string, error) {
	s, ok := a.desc.Annotations[sigKey]
	if !ok {
		return "", fmt.Errorf("signature layer %s is missing %q annotation", a.desc.Digest, sigKey)
	}
	return s, nil
}

// cert is the signing certificate, nil when there is none.
func (a Attestation) cert() (*x509.Certificate, error) {
	certs, err := a.certs(certKey)
	if err != nil || len(certs) == 0 {
		return nil, err
	}
	return certs[0], nil
}

// chain is the certificate chain, leaf's issuer first.
func (a Attestation) chain() ([]*x509.Certificate, error) { return a.certs(chainKey) }

func (a Attestation) certs(key string) ([]*x509.Certificate, error) {
	p := a.desc.Annotations[key]
	if p == "" {
		return nil, nil
	}
	return cryptoutils.LoadCertificatesFromPEM(strings.NewReader(p))
}

// decodeExtras decodes the transparency-log bundle and RFC 3161
// timestamp annotations, which cosign decodes (and rejects the layer
// over) before it verifies an attestation, though kiln checks neither.
func (a Attestation) decodeExtras() error {
	if v := a.desc.Annotations[bundleKey]; v != "" {
		var b bundle.RekorBundle
		if err := json.Unmarshal([]byte(v), &b); err != nil {
			return fmt.Errorf("unmarshaling bundle: %w", err)
		}
	}
	if v := a.desc.Annotations[timestampKey]; v != "" {
		var b bundle.RFC3161Timestamp
		if err := json.Unmarshal([]byte(v), &b); err != nil {
			return fmt.Errorf("unmarshaling RFC3161 timestamp bundle: %w", err)
		}
	}
	return nil
}
