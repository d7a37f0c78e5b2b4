package sign

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
	intoto "github.com/in-toto/in-toto-golang/in_toto"
	"github.com/sigstore/cosign/v2/pkg/cosign"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign/proof"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// MaxAttachmentSize is proof.MaxAttachmentSize: the one limit on a
// layer of a signature or attestation artifact.
const MaxAttachmentSize = proof.MaxAttachmentSize

// CheckOpts is proof.CheckOpts: cosign's verification options for id.
func CheckOpts(ctx context.Context, r registry.Remote, id trust.Identity) (*cosign.CheckOpts, error) {
	return proof.CheckOpts(ctx, r, id)
}

// Statements is proof.Statements: the verified statements id signed.
func Statements(ctx context.Context, r registry.Remote, image name.Digest, id trust.Identity) ([]intoto.Statement, error) {
	return proof.Statements(ctx, r, image, id)
}

// Prove is proof.Prove: image is a fact for want, signed and attested by
// id.
func Prove(ctx context.Context, r registry.Remote, image name.Digest, id trust.Identity, want trust.Inputs) error {
	return proof.Prove(ctx, r, image, id, want)
}
