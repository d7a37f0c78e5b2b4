package proof

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

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

// maxLayers is cosign's limit on the layers of one artifact
// (pkg/oci/remote's maxLayers): an artifact over it is refused whole.
const maxLayers = 1000

// VerifyAttachments is cosign's VerifyImageSignatures and
// VerifyImageAttestations over the image's artifacts within
// MaxAttachmentSize: the image is verified when one signature layer
// verifies with c; the attestations returned are those that verify.
// It reads the image and its artifacts from digest's own registry, never
// a mirror, and writes nothing.
func VerifyAttachments(ctx context.Context, digest name.Digest, c *Checks) ([]Attestation, error) {
	h, err := entity(ctx, c.Remote, digest)
	if err != nil {
		return nil, err
	}
	sigs, err := artifact(ctx, c.Remote, digest.Context(), h, "sig")
	if err != nil {
		return nil, err
	}
	if err := c.verifyOne(ctx, sigs, h); err != nil {
		return nil, err
	}
	atts, err := artifact(ctx, c.Remote, digest.Context(), h, "att")
	if err != nil {
		return nil, err
	}
	return c.verifyAttestations(ctx, atts, h)
}

// entity reads digest's manifest, as cosign's ociremote.SignedEntity
// does, and returns its digest. A missing image wraps
// registry.ErrNotFound, so that it is never read as an unsigned one.
func entity(ctx context.Context, r registry.Remote, digest name.Digest) (v1.Hash, error) {
	desc, err := r.GetNamed(ctx, digest)
	if code, ok := registry.HTTPStatus(err); ok && code == http.StatusNotFound {
		return v1.Hash{}, fmt.Errorf("%s: %w: entity not found in registry, error: %v", digest, registry.ErrNotFound, err)
	}
	if err != nil {
		return v1.Hash{}, err
	}
	switch desc.MediaType {
	case types.OCIImageIndex, types.DockerManifestList, types.OCIManifestSchema1, types.DockerManifestSchema2:
	default:
		return v1.Hash{}, fmt.Errorf("unknown mime type: %v", desc.MediaType)
	}
	if desc.Digest.String() != digest.DigestStr() {
		return v1.Hash{}, fmt.Errorf("the registry returned %s for %s", desc.Digest, digest)
	}
	return desc.Digest, nil
}

// layers is an artifact's layers within MaxAttachmentSize, the digests
// of those it skipped, and the error of listing them: cosign reads the
// manifest when it fetches the artifact but lists its layers only when
// it verifies them, and reports a listing error there.
type layers struct {
	kept    []Attestation
	skipped []v1.Hash
	err     error
}

// artifact reads h's cosign artifact in repo, the tag <alg>-<hex>.<suffix>
// as cosign names it. A missing tag is an artifact without layers, as in
// cosign; any other registry error is returned. Layers over
// MaxAttachmentSize are judged by their descriptors and skipped, never
// downloaded.
func artifact(ctx context.Context, r registry.Remote, repo name.Repository, h v1.Hash, suffix string) (layers, error) {
	tag := repo.Tag(fmt.Sprint(h.Algorithm, "-", h.Hex, ".", suffix))
	img, err := r.ImageNamed(ctx, tag)
	if code, ok := registry.HTTPStatus(err); ok && code == http.StatusNotFound {
		return layers{}, nil
	}
	if err != nil {
		return layers{}, err
	}
	var out layers
	out.kept, out.skipped, out.err = list(img)
	return out, nil
}

// list is the artifact's layers within MaxAttachmentSize and the digests
// of those over it.
func list(img v1.Image) ([]Attestation, []v1.Hash, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, nil, err
	}
	if n := len(m.Layers); n > maxLayers {
		return nil, nil, fmt.Errorf("number of layers (%d) exceeded the limit (%d)", n, maxLayers)
	}
	var kept []Attestation
	var skipped []v1.Hash
	for _, d := range m.Layers {
		l, err := img.LayerByDigest(d.Digest)
		if err != nil {
			return nil, nil, err
		}
		if d.Size > MaxAttachmentSize {
			skipped = append(skipped, d.Digest)
			continue
		}
		kept = append(kept, Attestation{desc: d, layer: l})
	}
	return kept, skipped, nil
}

// verifyOne verifies the signature layers within MaxAttachmentSize, the
// first to verify ending the search, as cosign's own verification does.
func (c *Checks) verifyOne(ctx context.Context, sigs layers, h v1.Hash) error {
	if sigs.err != nil {
		return sigs.err
	}
	if len(sigs.kept) == 0 {
		return fmt.Errorf("no signatures found%s", skippedNote(sigs.skipped))
	}
	var errs []error
	for _, s := range sigs.kept {
		if err := c.verifySignature(ctx, s, h); err != nil {
			errs = append(errs, err)
			continue
		}
		return nil
	}
	return fmt.Errorf("no signature verified: %w%s", errors.Join(errs...), skippedNote(sigs.skipped))
}

// verifyAttestations returns the attestation layers that verify, or,
// when none does, cosign's error listing why each failed.
func (c *Checks) verifyAttestations(ctx context.Context, atts layers, h v1.Hash) ([]Attestation, error) {
	if atts.err != nil {
		return nil, atts.err
	}
	var ok []Attestation
	var errs []error
	for _, a := range atts.kept {
		if err := c.verifyAttestation(ctx, a, h); err != nil {
			errs = append(errs, err)
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		return nil, fmt.Errorf("no matching attestations: %s%s", joinLines(errs), skippedNote(atts.skipped))
	}
	return ok, nil
}

// joinLines joins error messages as cosign's ErrNoMatchingAttestations
// does.
func joinLines(errs []error) string {
	s := ""
	for i, err := range errs {
		if i > 0 {
			s += "\n "
		}
		s += err.Error()
	}
	return s
}

func skippedNote(skipped []v1.Hash) string {
	if len(skipped) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d layers over the %d-byte limit skipped, unread)", len(skipped), MaxAttachmentSize)
}

// Oversized is how many layers of image's signature artifact (.sig) are
// over MaxAttachmentSize. The proof skips them, but containers/image (and
// so verify, rollout and the node's CRI-O) refuses the whole image while
// one is there, until image-sign writes the artifact anew without it.
// image-build reuses an image only when this is zero, since a reused image
// is not signed again. It only reads the registry.
func Oversized(ctx context.Context, r registry.Remote, image name.Digest) (int, error) {
	h, err := v1.NewHash(image.DigestStr())
	if err != nil {
		return 0, fmt.Errorf("%s: %w", image, err)
	}
	sigs, err := artifact(ctx, r, image.Context(), h, "sig")
	if err != nil {
		return 0, err
	}
	if sigs.err != nil {
		return 0, sigs.err
	}
	return len(sigs.skipped), nil
}
