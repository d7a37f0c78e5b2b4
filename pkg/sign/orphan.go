package sign

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign/proof"
)

// VerifySignatureArtifact is proof.VerifySignatureArtifact: the .sig
// artifact of digest verifies with v, without reading the image.
func VerifySignatureArtifact(ctx context.Context, r registry.Remote, digest name.Digest, v signature.Verifier) error {
	return proof.VerifySignatureArtifact(ctx, r, digest, v)
}
