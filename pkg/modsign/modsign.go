package modsign

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/asn1"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/digitorus/pkcs7"
)

// The kernel's module-signature format (include/linux/module_signature.h):
//
//	module content | PKCS#7 signature | struct module_signature | magic
//
// For PKCS#7 signatures every field of the 12-byte trailer is zero except
// id_type (2) and sig_len (big endian); signer, hash and key id live inside
// the PKCS#7 message, which is what modinfo and the kernel read.
const (
	// ModuleSigMagic ends every signed module.
	ModuleSigMagic = "~Module signature appended~\n"
	trailerLen     = 12
	idTypePKCS7    = 2
)

// Hashes are the module signature hashes kmod-sign's --hash accepts.
var Hashes = map[string]crypto.Hash{"sha256": crypto.SHA256, "sha384": crypto.SHA384, "sha512": crypto.SHA512}

// Signature describes the signature appended to a module.
type Signature struct {
	// PKCS7 is the DER-encoded detached SignedData.
	PKCS7 []byte
	// IDType is the trailer's id_type; 2 (PKCS#7) is the only one kernels
	// since 4.x verify.
	IDType byte
}

// ErrNotSigned is returned by ParseSignature for a module with no signature.
var ErrNotSigned = errors.New("module is not signed")

// ParseSignature splits a module into its unsigned content and its
// signature. A module without the magic string returns ErrNotSigned; a
// malformed trailer is an error naming the bad field.
func ParseSignature(module []byte) ([]byte, *Signature, error) {
	if !bytes.HasSuffix(module, []byte(ModuleSigMagic)) {
		return module, nil, ErrNotSigned
	}
	rest := module[:len(module)-len(ModuleSigMagic)]
	if len(rest) < trailerLen {
		return nil, nil, fmt.Errorf("parsing module signature: %d bytes before the magic string, need %d for the trailer", len(rest), trailerLen)
	}
	tr := rest[len(rest)-trailerLen:]
	sigLen := binary.BigEndian.Uint32(tr[8:12])
	body := rest[:len(rest)-trailerLen]
	if uint64(sigLen) > uint64(len(body)) {
		return nil, nil, fmt.Errorf("parsing module signature: sig_len %d exceeds the %d bytes before the trailer", sigLen, len(body))
	}
	if tr[2] != idTypePKCS7 {
		return nil, nil, fmt.Errorf("parsing module signature: id_type %d, only PKCS#7 (%d) is supported", tr[2], idTypePKCS7)
	}
	if tr[0] != 0 || tr[1] != 0 || tr[3] != 0 || tr[4] != 0 {
		return nil, nil, fmt.Errorf("parsing module signature: algo/hash/signer_len/key_id_len must be 0 for PKCS#7, got %v", tr[:5])
	}
	split := len(body) - int(sigLen)
	return body[:split], &Signature{PKCS7: body[split:], IDType: tr[2]}, nil
}

// Signer signs kernel modules with one key and certificate, in the format
// scripts/sign-file writes.
type Signer struct {
	cert *x509.Certificate
	key  crypto.Signer
	hash crypto.Hash
}

// NewSigner checks that key belongs to cert. Only SHA-2 hashes are offered:
// kernels built for RHCOS reject SHA-1 module signatures.
func NewSigner(cert *x509.Certificate, key crypto.Signer, hash crypto.Hash) (*Signer, error) {
	switch hash {
	case crypto.SHA256, crypto.SHA384, crypto.SHA512:
	default:
		return nil, fmt.Errorf("creating module signer: hash %v is not supported (use sha256, sha384 or sha512)", hash)
	}
	pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		return nil, fmt.Errorf("creating module signer: the key does not match the certificate of %q", cert.Subject.CommonName)
	}
	return &Signer{cert: cert, key: key, hash: hash}, nil
}

// Certificate is the certificate s names as the signer: kmod-sign proves
// reuse and records the inputs by it.
func (s *Signer) Certificate() *x509.Certificate { return s.cert }

// Sign returns module signed with s. An already-signed module is re-signed:
// the old signature is removed first, so a module never carries two.
func (s *Signer) Sign(module []byte) ([]byte, error) {
	content, _, err := ParseSignature(module)
	if err != nil && !errors.Is(err, ErrNotSigned) {
		return nil, err
	}
	if !bytes.HasPrefix(content, []byte("\x7fELF")) {
		return nil, errors.New("signing module: not an ELF file")
	}
	sig, err := s.pkcs7(content)
	if err != nil {
		return nil, fmt.Errorf("signing module: %w", err)
	}
	return appendSignature(content, sig), nil
}

// appendSignature is content followed by the PKCS#7 signature, the
// trailer and the magic string, as scripts/sign-file writes them.
func appendSignature(content, sig []byte) []byte {
	out := make([]byte, 0, len(content)+len(sig)+trailerLen+len(ModuleSigMagic))
	out = append(out, content...)
	out = append(out, sig...)
	var tr [trailerLen]byte
	tr[2] = idTypePKCS7
	binary.BigEndian.PutUint32(tr[8:], uint32(len(sig)))
	out = append(out, tr[:]...)
	return append(out, ModuleSigMagic...)
}

// pkcs7 makes a detached SignedData with no signed attributes, identified
// by issuer and serial: what sign-file makes with CMS_NOATTR. Unlike
// sign-file (CMS_NOCERTS) the signer's certificate is embedded; the kernel
// ignores embedded certificates for trust and looks the key up in its
// keyring by issuer and serial, so this only costs about a kilobyte.
func (s *Signer) pkcs7(content []byte) ([]byte, error) {
	sd, err := pkcs7.NewSignedData(content)
	if err != nil {
		return nil, err
	}
	oid, err := digestOID(s.hash)
	if err != nil {
		return nil, err
	}
	sd.SetDigestAlgorithm(oid)
	if err := sd.SignWithoutAttr(s.cert, s.key, pkcs7.SignerInfoConfig{}); err != nil {
		return nil, err
	}
	sd.Detach()
	return sd.Finish()
}

func digestOID(h crypto.Hash) (asn1.ObjectIdentifier, error) {
	switch h {
	case crypto.SHA256:
		return pkcs7.OIDDigestAlgorithmSHA256, nil
	case crypto.SHA384:
		return pkcs7.OIDDigestAlgorithmSHA384, nil
	case crypto.SHA512:
		return pkcs7.OIDDigestAlgorithmSHA512, nil
	}
	return nil, fmt.Errorf("no digest OID for %v", h)
}

// LoadKeyPair reads the signing certificate (PEM or DER, KMM's "cert" key)
// and private key (PEM, PKCS#1/PKCS#8/EC, KMM's "key" key). Errors never
// include key material.
func LoadKeyPair(certData, keyData []byte) (*x509.Certificate, crypto.Signer, error) {
	certDER := certData
	if b, _ := pem.Decode(certData); b != nil {
		certDER = b.Bytes
	}
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing signing certificate: %w", err)
	}
	b, _ := pem.Decode(keyData)
	if b == nil {
		return nil, nil, errors.New("parsing signing key: no PEM block found")
	}
	key, err := parseKey(b.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing signing key (%s block): %w", b.Type, err)
	}
	return cert, key, nil
}

func parseKey(der []byte) (crypto.Signer, error) {
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, errors.New("not a PKCS#1, PKCS#8 or EC private key")
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key type %T cannot sign", k)
	}
	return s, nil
}
