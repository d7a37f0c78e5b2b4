package imagebuild

import (
	"fmt"
	"maps"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/nodeimport"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// NodeLint is the node import check of a built image: what image-build
// records in its report and results and image-sign attests.
type NodeLint struct {
	nodeimport.Summary
	// Findings are the warnings, whole (the summary holds them as text).
	Findings []nodeimport.Finding `json:"findings,omitempty"`
	// Attested says the result was not computed in this run: the image was
	// reused, proven by an attestation of these inputs, which name the
	// rules it passed.
	Attested bool `json:"attested,omitempty"`
}

// Record is the lint result as trust records and attests it.
func (l *NodeLint) Record() *trust.NodeLint {
	if l == nil {
		return nil
	}
	return &trust.NodeLint{Rules: l.Rules, Pass: l.Pass, Warnings: l.Warnings}
}

// lintImages runs the node import check over every platform image of a
// build (keyed by platform, "" for a single image), adding the plan's warnings; an error finding refuses the build as
// rejected input, naming the platform, the file and the rule.
func lintImages(images map[string]v1.Image, plan *Plan) (*NodeLint, error) {
	all := append([]nodeimport.Finding(nil), plan.Warnings...)
	for _, platform := range slices.Sorted(maps.Keys(images)) {
		img := images[platform]
		what := "checking the image as a node imports it"
		if platform != "" {
			what = "checking the image for " + platform + " as a node imports it"
		}
		// Only the findings are used: the files' content is not hashed.
		_, fs, err := nodeimport.Import(img, nodeimport.Options{NoDigests: true})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if err := nodeimport.Check(fs); err != nil {
			return nil, exitcode.InputRejected(fmt.Errorf("%s: %w; nothing was pushed", what, err))
		}
		all = append(all, nodeimport.Warnings(fs)...)
	}
	return &NodeLint{Summary: nodeimport.Summarize(all), Findings: all}, nil
}
