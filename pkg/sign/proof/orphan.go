package proof

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// VerifySignatureArtifact checks that the .sig artifact of digest (its
// sha256-<hex>.sig tag) holds a cosign signature over digest that
// verifies with v, reading only the artifact: the image itself may be
// gone, as after a prune that stopped between deleting an image and its
// artifacts. It is cosign's signature check (the payload's digest claim
// included), not a check of an image.
func VerifySignatureArtifact(ctx context.Context, r registry.Remote, digest name.Digest, v signature.Verifier) error {
	ropts, err := r.Options(ctx)
	if err != nil {
		return err
	}
	h, err := v1.NewHash(digest.DigestStr())
	if err != nil {
		return fmt.Errorf("reading the signature artifact of %s: %w", digest, err)
	}
	oopts := []ociremote.Option{ociremote.WithRemoteOptions(ropts...)}
	tag, err := ociremote.SignatureTag(digest, oopts...)
	if err != nil {
		return fmt.Errorf("naming the signature artifact of %s: %w", digest, err)
	}
	sigs, err := ociremote.Signatures(tag, oopts...)
	if err != nil {
		return fmt.Errorf("reading the signature artifact of %s: %w", digest, registry.Classify(err, "reading", digest.String()))
	}
	co := &cosign.CheckOpts{SigVerifier: v, IgnoreTlog: true, IgnoreSCT: true, ClaimVerifier: cosign.SimpleClaimVerifier}
	if err := verifyOne(ctx, sigs, h, co); err != nil {
		return fmt.Errorf("verifying the signature artifact of %s: %w", digest, err)
	}
	return nil
}
