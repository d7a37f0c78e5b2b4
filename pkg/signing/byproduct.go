package signing

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"

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
