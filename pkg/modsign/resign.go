package modsign

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing/fstest"

	"github.com/digitorus/pkcs7"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// Resign makes what kmod-sign made from unsigned, WITHOUT the private key:
// for every file in the attested filesToSign it takes the module signature
// from signed (the image under check), checks that the signed module's
// content equals unsigned's module byte for byte, that the PKCS#7 verifies
// over it with its embedded certificate, and that the certificate's DER
// sha256 equals in's certificateHash; then appends that signature to
// unsigned's module exactly as kmod-sign does, and assembles the image as
// kmod-sign does. Errors name the file and reason.
//
// Module signatures are deterministic for a given RSA key (PKCS#1 v1.5,
// no signed attributes, so no signing time), so kmod-sign run again with
// the key would make the very same bytes; Resign checks the rest of the
// image without needing the key. The returned Inputs are computed from
// unsigned and the signatures, except the unsigned image's reference,
// which only the caller knows (it is taken from in).
func Resign(unsigned, signed v1.Image, in trust.Inputs) (*buildah.Rebuilt, error) {
	if in.BuildType != trust.BuildTypeKmodSign {
		return nil, fmt.Errorf("re-signing: buildType %q, want %q", in.BuildType, trust.BuildTypeKmodSign)
	}
	p := in.Parameters
	hash, ok := Hashes[p["hash"]]
	if !ok {
		return nil, fmt.Errorf("re-signing: hash %q, want sha256, sha384 or sha512", p["hash"])
	}
	kver, err := ModuleKernel(unsigned)
	if err != nil {
		return nil, fmt.Errorf("re-signing: reading the unsigned image: %w", err)
	}
	if kver != p["kernelVersion"] {
		return nil, fmt.Errorf("re-signing: the unsigned image's kernel is %s, the attestation names %s", kver, p["kernelVersion"])
	}
	files, err := imageFiles(unsigned)
	if err != nil {
		return nil, fmt.Errorf("re-signing: reading the unsigned image: %w", err)
	}
	signedFiles, err := imageFiles(signed)
	if err != nil {
		return nil, fmt.Errorf("re-signing: reading the signed image: %w", err)
	}
	var patterns []string
	if p["filesToSign"] != "" {
		patterns = strings.Split(p["filesToSign"], "\n")
	}
	paths, err := ExpandFilesToSign(files, patterns, kver)
	if err != nil {
		return nil, fmt.Errorf("re-signing: %w", err)
	}
	var serial string
	out, _, err := signedImage(unsigned, files, paths, kver, func(path string, module []byte) ([]byte, error) {
		m, s, err := takeSignature(placedPath(path, kver), module, signedFiles, p["certificateHash"], hash)
		serial = s
		return m, err
	}, DefaultDepmod)
	if err != nil {
		return nil, fmt.Errorf("re-signing: %w", err)
	}
	d, err := out.Digest()
	if err != nil {
		return nil, err
	}
	again, err := trust.KmodSign{
		Module: p["module"], Target: p["target"], Unsigned: p["unsignedImage"], CertHash: p["certificateHash"],
		CertSerial: serial, Hash: p["hash"], FilesToSign: patterns, KernelVersion: kver,
	}.Inputs()
	if err != nil {
		return nil, fmt.Errorf("re-signing: %w", err)
	}
	return &buildah.Rebuilt{Digest: d, Image: out, Inputs: again}, nil
}

// takeSignature returns module (unsigned's copy at path) with the
// signature of signed's copy appended, after checking that signature, and
// the signing certificate's serial in hex.
func takeSignature(path string, module []byte, signed fstest.MapFS, certHash string, hash crypto.Hash) ([]byte, string, error) {
	f, ok := signed[strings.TrimPrefix(path, "/")]
	if !ok {
		return nil, "", fmt.Errorf("module %s: not in the signed image", path)
	}
	if f.Data == nil {
		return nil, "", fmt.Errorf("module %s: not a regular .ko file of at most %d bytes in the signed image", path, modulesIndexLimit)
	}
	content, sig, err := ParseSignature(f.Data)
	if errors.Is(err, ErrNotSigned) {
		return nil, "", fmt.Errorf("module %s: not signed in the signed image", path)
	}
	if err != nil {
		return nil, "", fmt.Errorf("module %s in the signed image: %w", path, err)
	}
	// kmod-sign replaces a signature the unsigned module already carries.
	want, _, err := ParseSignature(module)
	if err != nil && !errors.Is(err, ErrNotSigned) {
		return nil, "", fmt.Errorf("module %s in the unsigned image: %w", path, err)
	}
	if !bytes.Equal(content, want) {
		return nil, "", fmt.Errorf("module %s: the signed image's module content (%d bytes, %s) differs from the unsigned image's (%d bytes, %s)",
			path, len(content), sha256Hex(content), len(want), sha256Hex(want))
	}
	serial, err := checkSignature(content, sig.PKCS7, certHash, hash)
	if err != nil {
		return nil, "", fmt.Errorf("module %s: %w", path, err)
	}
	return appendSignature(want, sig.PKCS7), serial, nil
}

// checkSignature checks that der is what kmod-sign makes over content: one
// signer, no signed attributes, the attested digest algorithm, a signature
// that verifies with the embedded certificate, and that certificate being
// the attested one (by the sha256 of its DER).
func checkSignature(content, der []byte, certHash string, hash crypto.Hash) (string, error) {
	p7, err := pkcs7.Parse(der)
	if err != nil {
		return "", fmt.Errorf("parsing the PKCS#7 signature: %w", err)
	}
	if len(p7.Signers) != 1 {
		return "", fmt.Errorf("the signature has %d signers, want 1", len(p7.Signers))
	}
	si := p7.Signers[0]
	if len(si.AuthenticatedAttributes) > 0 {
		return "", fmt.Errorf("the signature has %d signed attributes; kmod-sign makes none", len(si.AuthenticatedAttributes))
	}
	oid, err := digestOID(hash)
	if err != nil {
		return "", err
	}
	if !si.DigestAlgorithm.Algorithm.Equal(oid) {
		return "", fmt.Errorf("the signature's digest algorithm is %v, the attestation names %v", si.DigestAlgorithm.Algorithm, hash)
	}
	cert := p7.GetOnlySigner()
	if cert == nil {
		return "", errors.New("the signature carries no certificate of its signer")
	}
	if got, _ := CertID(cert); got != certHash {
		return "", fmt.Errorf("signed by certificate %s (%q), the attestation names %s", got, cert.Subject.CommonName, certHash)
	}
	p7.Content = content
	if err := p7.Verify(); err != nil {
		return "", fmt.Errorf("the signature does not verify over the module with certificate %q: %w", cert.Subject.CommonName, err)
	}
	return cert.SerialNumber.Text(16), nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}
