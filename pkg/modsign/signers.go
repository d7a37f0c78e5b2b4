package modsign

import (
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"

	"github.com/digitorus/pkcs7"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// CertID is the module-signing certificate as the inputs name it: the
// sha256 of its DER and its serial in hex. The certificate is public.
func CertID(cert *x509.Certificate) (hash, serial string) {
	sum := sha256.Sum256(cert.Raw)
	return "sha256:" + hex.EncodeToString(sum[:]), cert.SerialNumber.Text(16)
}

// CheckModuleSigners checks that every module filesToSign names in img
// carries a module signature made by cert's key and naming cert (issuer
// and serial) as its signer. The first failure names the module and why;
// the list of checked modules is returned when all pass.
func CheckModuleSigners(img v1.Image, filesToSign []string, kernelFullVersion string, cert *x509.Certificate) ([]string, error) {
	files, err := imageFiles(img)
	if err != nil {
		return nil, err
	}
	placed := make([]string, len(filesToSign))
	for i, f := range filesToSign {
		placed[i] = placedPath(strings.ReplaceAll(f, KernelVersionVar, kernelFullVersion), kernelFullVersion)
	}
	paths, err := ExpandFilesToSign(files, placed, kernelFullVersion)
	if err != nil {
		return nil, fmt.Errorf("where kmod-sign places %v: %w", filesToSign, err)
	}
	for _, p := range paths {
		f := files[strings.TrimPrefix(p, "/")]
		if f.Data == nil {
			return nil, fmt.Errorf("module %s: not a regular .ko file of at most %d bytes", p, modulesIndexLimit)
		}
		if err := SignedBy(f.Data, cert); err != nil {
			return nil, fmt.Errorf("module %s: %w", p, err)
		}
	}
	return paths, nil
}

// SignedBy checks that module's appended signature was made by cert's key
// over the module's content, with cert named as the signer. Certificates
// embedded in the signature are ignored: only cert is trusted, so an old
// or foreign certificate carried along proves nothing.
func SignedBy(module []byte, cert *x509.Certificate) error {
	content, sig, err := ParseSignature(module)
	if err != nil {
		return err
	}
	p7, err := pkcs7.Parse(sig.PKCS7)
	if err != nil {
		return fmt.Errorf("parsing the module's PKCS#7 signature: %w", err)
	}
	if len(p7.Signers) != 1 {
		return fmt.Errorf("the module signature has %d signers, want 1", len(p7.Signers))
	}
	s := p7.Signers[0].IssuerAndSerialNumber
	if s.SerialNumber == nil || s.SerialNumber.Cmp(cert.SerialNumber) != 0 || string(s.IssuerName.FullBytes) != string(cert.RawIssuer) {
		return fmt.Errorf("signed by another certificate (issuer %q serial %s), want issuer %q serial %s",
			issuerText(s.IssuerName.FullBytes), serialText(s.SerialNumber), cert.Issuer.String(), cert.SerialNumber.Text(16))
	}
	p7.Content, p7.Certificates = content, []*x509.Certificate{cert}
	if err := p7.Verify(); err != nil {
		return fmt.Errorf("the signature naming %q serial %s does not verify with that certificate: %w", cert.Subject.CommonName, cert.SerialNumber.Text(16), err)
	}
	return nil
}

func issuerText(der []byte) string {
	var rdn pkix.RDNSequence
	if _, err := asn1.Unmarshal(der, &rdn); err != nil {
		return "unreadable"
	}
	var n pkix.Name
	n.FillFromRDNSequence(&rdn)
	return n.String()
}

func serialText(n *big.Int) string {
	if n == nil {
		return "none"
	}
	return n.Text(16)
}
