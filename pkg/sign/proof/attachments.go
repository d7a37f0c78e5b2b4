package proof

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/oci"
	"github.com/sigstore/cosign/v2/pkg/oci/empty"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// MaxAttachmentSize is the one limit on a layer of a signature (.sig) or
// attestation (.att) artifact, for every reader in kiln: the reuse proof,
// image-sign, and verify and rollout, which read signatures through
// containers/image as the node's CRI-O does. It is containers/image's own
// limit on a signature (internal/iolimits MaxSignatureBodySize, 4 MiB), so
// kiln never proves by a layer the node could not read. A layer over it is
// skipped, never read: a junk layer that anyone with push access adds
// beside kiln's signature cannot deny the image to kiln's proof, and
// image-sign drops it when it next writes the artifact.
const MaxAttachmentSize = 4 << 20

// within returns sigs without the layers over MaxAttachmentSize, judged by
// their descriptors (nothing is downloaded), and the digests of the layers
// it left out.
func within(sigs oci.Signatures) (oci.Signatures, []v1.Hash, error) {
	list, err := sigs.Get()
	if err != nil {
		return nil, nil, err
	}
	var kept []oci.Signature
	var skipped []v1.Hash
	for _, s := range list {
		size, err := s.Size()
		if err != nil {
			return nil, nil, err
		}
		if size > MaxAttachmentSize {
			d, _ := s.Digest()
			skipped = append(skipped, d)
			continue
		}
		kept = append(kept, s)
	}
	if len(skipped) == 0 {
		return sigs, nil, nil
	}
	out, err := mutate.AppendSignatures(empty.Signatures(), false, kept...)
	return out, skipped, err
}

// trimmed is a signed entity whose signatures and attestations are within
// MaxAttachmentSize: what image-sign writes back, so an artifact with a
// junk layer is repaired by the next signing.
type trimmed struct {
	oci.SignedEntity
	sigs, atts oci.Signatures
}

func (t trimmed) Signatures() (oci.Signatures, error)   { return t.sigs, nil }
func (t trimmed) Attestations() (oci.Signatures, error) { return t.atts, nil }

// Trim returns se with its signatures and attestations within
// MaxAttachmentSize, for image-sign to write back.
func Trim(se oci.SignedEntity) (oci.SignedEntity, error) {
	sigs, err := se.Signatures()
	if err != nil {
		return nil, err
	}
	atts, err := se.Attestations()
	if err != nil {
		return nil, err
	}
	t := trimmed{SignedEntity: se}
	if t.sigs, _, err = within(sigs); err != nil {
		return nil, err
	}
	if t.atts, _, err = within(atts); err != nil {
		return nil, err
	}
	return t, nil
}

// VerifyAttachments is cosign's VerifyImageSignatures and
// VerifyImageAttestations over the image's artifacts within
// MaxAttachmentSize: the image is verified when one signature layer
// verifies with co; the attestations returned are those that verify.
func VerifyAttachments(ctx context.Context, digest name.Digest, co *cosign.CheckOpts) ([]oci.Signature, error) {
	se, err := ociremote.SignedEntity(digest, co.RegistryClientOpts...)
	var missing *ociremote.EntityNotFoundError
	if errors.As(err, &missing) {
		// cosign's error does not wrap the registry's 404: say it, so
		// that a missing image is never read as an unsigned one.
		return nil, fmt.Errorf("%s: %w: %v", digest, registry.ErrNotFound, err)
	}
	if err != nil {
		return nil, err
	}
	h, err := se.Digest()
	if err != nil {
		return nil, err
	}
	if h.String() != digest.DigestStr() {
		return nil, fmt.Errorf("the registry returned %s for %s", h, digest)
	}
	sigs, err := se.Signatures()
	if err != nil {
		return nil, err
	}
	if err := verifyOne(ctx, sigs, h, co); err != nil {
		return nil, err
	}
	atts, err := se.Attestations()
	if err != nil {
		return nil, err
	}
	atts, skipped, err := within(atts)
	if err != nil {
		return nil, err
	}
	co.ClaimVerifier = cosign.IntotoSubjectClaimVerifier
	ok, _, err := cosign.VerifyImageAttestation(ctx, atts, h, co)
	if err != nil {
		return nil, fmt.Errorf("%w%s", err, skippedNote(skipped))
	}
	return ok, nil
}

// verifyOne verifies the signature layers within MaxAttachmentSize with
// co, the first to verify ending the search, as cosign's own
// verification does.
func verifyOne(ctx context.Context, all oci.Signatures, h v1.Hash, co *cosign.CheckOpts) error {
	sigs, skipped, err := within(all)
	if err != nil {
		return err
	}
	list, err := sigs.Get()
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return fmt.Errorf("no signatures found%s", skippedNote(skipped))
	}
	var errs []error
	for _, s := range list {
		if _, err := cosign.VerifyImageSignature(ctx, s, h, co); err != nil {
			errs = append(errs, err)
			continue
		}
		return nil
	}
	return fmt.Errorf("no signature verified: %w%s", errors.Join(errs...), skippedNote(skipped))
}

func skippedNote(skipped []v1.Hash) string {
	if len(skipped) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d layers over the %d-byte limit skipped, unread)", len(skipped), MaxAttachmentSize)
}
