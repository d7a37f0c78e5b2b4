package kmod

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/digitorus/pkcs7"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// Reuse is the outcome of checking whether a registry object may stand in
// for a build. Image is repository@sha256:… when something sits at the
// reference; Rejected says why it is not reused ("" when it is, or when
// nothing was there).
type Reuse struct {
	Image    string
	Digest   string
	Proven   bool
	Rejected string
	// Signed are the modules checked against the current certificate.
	Signed []string
}

// resolveInput names an input image (OS_AUTO, DTK_AUTO, an unsigned image)
// by digest: what sits at its tag now, read through the mirrors. The
// digest, not the tag, is what a build uses and what its inputs record, so
// the tag moving later changes nothing already decided.
func resolveInput(ctx context.Context, r registry.Remote, image string) (name.Digest, error) {
	return resolve(ctx, r, image, r.Head)
}

// resolveOwn names kiln's own target by digest, read from the registry
// kiln pushes it to (never a mirror).
func resolveOwn(ctx context.Context, r registry.Remote, image string) (name.Digest, error) {
	return resolve(ctx, r, image, r.HeadNamed)
}

func resolve(ctx context.Context, r registry.Remote, image string, head func(context.Context, name.Reference) (*v1.Descriptor, error)) (name.Digest, error) {
	ref, err := r.ParseRef(image)
	if err != nil {
		return name.Digest{}, err
	}
	if d, ok := ref.(name.Digest); ok {
		return d, nil
	}
	desc, err := head(ctx, ref)
	if err != nil {
		return name.Digest{}, registry.Classify(err, "resolving", image)
	}
	return ref.Context().Digest(desc.Digest.String()), nil
}

// proveAt checks what sits at image (a tag) against want: it is reused only
// when it carries id's signature and an attestation from id binding
// exactly want (sign.Prove). Tags, labels and annotations play no part:
// anyone with push access can copy them. It makes no registry write.
func proveAt(ctx context.Context, r registry.Remote, image string, id trust.Identity, want trust.Inputs) (Reuse, error) {
	d, err := resolveOwn(ctx, r, image)
	if errors.Is(err, registry.ErrNotFound) {
		return Reuse{}, nil
	}
	if err != nil {
		return Reuse{}, err
	}
	u := Reuse{Image: d.String(), Digest: d.DigestStr()}
	switch err := sign.Prove(ctx, r, d, id, want); {
	case err == nil:
		u.Proven = true
	case errors.Is(err, trust.ErrNotProven):
		u.Rejected = fmt.Sprintf("%s holds %s with %v", image, d.DigestStr(), unwrapSubject(err, d))
	default:
		return Reuse{}, err
	}
	return u, nil
}

// unwrapSubject drops Prove's leading "repo@digest: " so the message reads
// "<ref> holds sha256:… with no kiln attestation for these inputs: why".
func unwrapSubject(err error, d name.Digest) string {
	return strings.TrimPrefix(err.Error(), d.String()+": ")
}

// reject logs why an object is not reused and records it for the
// REUSE_REJECTED result.
func (u *Reuse) reject(p *step.Progress, why string) {
	if why != "" {
		u.Rejected, u.Proven = why, false
	}
	if u.Rejected != "" {
		p.Printf("%s; not reused", u.Rejected)
	}
}

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
