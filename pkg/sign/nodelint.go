package sign

import (
	"context"
	"fmt"
	"strings"

	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// nodeLintRulesPrefix starts every version of kiln's node import rules
// (pkg/nodeimport.RulesVersion).
const nodeLintRulesPrefix = "kiln-nodeimport/"

// RequireNodeLint checks that an attestation of image verified with v is
// a node image's whose inputs name the node import rules it passed: kiln
// pushes and signs only images that pass them, so an image without one
// was never checked as a node imports it. The error wraps ErrPolicy.
func RequireNodeLint(ctx context.Context, r registry.Remote, image string, v signature.Verifier) error {
	sts, err := VerifiedStatements(ctx, r, image, v)
	if exitcode.IsFault(err) {
		// The registry did not answer: no verdict on the image.
		return registry.Classify(err, "reading the attestations of", image)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	for _, st := range sts {
		in, err := trust.InputsOf(st)
		if err == nil && in.BuildType == trust.BuildTypeNodeImage && strings.HasPrefix(in.Parameters["nodeLint"], nodeLintRulesPrefix) {
			return nil
		}
	}
	return fmt.Errorf("%w: no attestation of %s from the policy's key says it passed kiln's node import check (externalParameters.nodeLint); it was built without it or by another builder", ErrPolicy, image)
}
