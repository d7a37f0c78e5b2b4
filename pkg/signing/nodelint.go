package signing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// nodeLintByproduct turns a build record's node import check into the
// byproduct image-sign attests: its rules, verdict and warning count in
// the URI, the sha256 of the whole result (warnings included) as digest.
// A record whose check did not pass is never signed.
func nodeLintByproduct(rec trust.Record) (*trust.Dependency, error) {
	if rec.NodeLint == nil {
		return nil, nil
	}
	if !rec.NodeLint.Pass {
		return nil, fmt.Errorf("the build record says the image failed the node import check (%s); refusing to sign it", rec.NodeLint.Rules)
	}
	b, err := json.Marshal(rec.NodeLint)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	return &trust.Dependency{
		Name:   trust.NodeLintByproduct,
		URI:    fmt.Sprintf("kiln:node-lint?rules=%s&pass=true&warnings=%d", url.QueryEscape(rec.NodeLint.Rules), len(rec.NodeLint.Warnings)),
		Digest: "sha256:" + hex.EncodeToString(sum[:]),
	}, nil
}

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
