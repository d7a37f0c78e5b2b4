package proof_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	intoto "github.com/in-toto/in-toto-golang/in_toto"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/oci"
	"github.com/sigstore/cosign/v2/pkg/oci/empty"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/sign/proof"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// This file is the reuse proof as kiln made it with cosign's own
// verification (cosign.VerifyImageSignature and VerifyImageAttestation
// with sign.CheckOpts) before pkg/sign/proof verified with sigstore's
// lower-level libraries: the reference the side-by-side test holds the
// proof to, word for word.

// cosignProve is Prove verified by cosign.
func cosignProve(ctx context.Context, r registry.Remote, image name.Digest, id trust.Identity, want trust.Inputs) error {
	return proof.ProveWith(image, id, want, func() ([]intoto.Statement, error) { return cosignStatements(ctx, r, image, id) })
}

// cosignStatements is Statements verified by cosign.
func cosignStatements(ctx context.Context, r registry.Remote, image name.Digest, id trust.Identity) ([]intoto.Statement, error) {
	co, err := sign.CheckOpts(ctx, r, id)
	if err != nil {
		return nil, err
	}
	atts, err := cosignVerifyAttachments(ctx, image, co)
	if err != nil {
		return nil, fmt.Errorf("verifying the signature and attestations of %s with %s: %w", image, id, err)
	}
	out := make([]intoto.Statement, 0, len(atts))
	for _, att := range atts {
		st, err := proof.StatementOf(att)
		if err != nil {
			return nil, fmt.Errorf("reading an attestation of %s: %w", image, err)
		}
		out = append(out, st)
	}
	return out, nil
}

// cosignVerifyAttachments is VerifyAttachments verified by cosign.
func cosignVerifyAttachments(ctx context.Context, digest name.Digest, co *cosign.CheckOpts) ([]oci.Signature, error) {
	se, err := ociremote.SignedEntity(digest, co.RegistryClientOpts...)
	var missing *ociremote.EntityNotFoundError
	if errors.As(err, &missing) {
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
	if err := cosignVerifyOne(ctx, sigs, h, co); err != nil {
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

func cosignVerifyOne(ctx context.Context, all oci.Signatures, h v1.Hash, co *cosign.CheckOpts) error {
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
		if size > proof.MaxAttachmentSize {
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

func skippedNote(skipped []v1.Hash) string {
	if len(skipped) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d layers over the %d-byte limit skipped, unread)", len(skipped), proof.MaxAttachmentSize)
}
