package work

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kiln-dev/kiln/pkg/nodeimport"
	"github.com/kiln-dev/kiln/pkg/termsafe"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// Files of the image stages (image-build, image-sign, verify) in image/.
const (
	// BuildReportFile is image-build's BuildReport.
	BuildReportFile = "build.json"
	// SignResultFile is image-sign's SignResult.
	SignResultFile = "sign.json"
	// PredictionFile is image-sign's record of the prediction it attested.
	PredictionFile = "prediction.json"
	// PolicyFile is verify's policy fragment for nodes, and
	// PolicyRegistriesDir/PolicyRegistriesFile its registries.d
	// fragment, which says where the signatures are.
	PolicyFile           = "policy.json"
	PolicyRegistriesDir  = "registries.d"
	PolicyRegistriesFile = "kiln.yaml"
)

// BuildReportPath is image/build.json.
func (w Workspace) BuildReportPath() string {
	return filepath.Join(w.StageDir(StageImageBuild), BuildReportFile)
}

// SignResultPath is image/sign.json.
func (w Workspace) SignResultPath() string {
	return filepath.Join(w.StageDir(StageImageSign), SignResultFile)
}

// PredictionPath is image/prediction.json.
func (w Workspace) PredictionPath() string {
	return filepath.Join(w.StageDir(StageImageSign), PredictionFile)
}

// BuildReport is work/image/build.json: what went into the image. image-sign
// attests from it.
type BuildReport struct {
	// Record is the image by digest and its inputs: what image-sign
	// attests.
	trust.Record
	Digest string `json:"digest"`
	Reused bool   `json:"reused"`
	// ReuseRejected says why the image at the tag was not reused.
	ReuseRejected string   `json:"reuseRejected,omitempty"`
	Fingerprint   string   `json:"fingerprint"`
	Tag           string   `json:"tag"`
	Base          string   `json:"base"`
	RenderedName  string   `json:"renderedName"`
	RenderedHash  string   `json:"renderedHash"`
	KmodDigests   []string `json:"kmodDigests,omitempty"`
	Pool          string   `json:"pool"`
	Platforms     []string `json:"platforms,omitempty"`
	Entries       []string `json:"entries"`
	// NodeLintFindings are the node import check's warnings, whole.
	NodeLintFindings []nodeimport.Finding `json:"nodeLintFindings,omitempty"`
	// NodeView is what an upgraded node gets of the rendered config from
	// the image, every path it does not get named.
	NodeView *NodeView `json:"nodeView,omitempty"`
}

// ReadBuildReport reads work/image/build.json.
func (w Workspace) ReadBuildReport() (*BuildReport, error) {
	path := w.BuildReportPath()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading build report: %w", err)
	}
	rep := &BuildReport{}
	if err := json.Unmarshal(b, rep); err != nil {
		return nil, fmt.Errorf("decoding build report %s: %w", path, err)
	}
	return rep, nil
}

// NodeView is what an upgraded node sees of the rendered config's files,
// links and units from the image alone: how many arrive as rendered, and
// which do not, and why. On an osImageURL rollout MCO's daemon writes the
// MachineConfig's files too, so a file listed here still reaches the node,
// from the daemon rather than the image; a node never sees it if the
// MachineConfig is later applied without the daemon (a new node booting
// the image from its boot image's first install keeps the image's /var).
type NodeView struct {
	// Rendered counts the MachineConfig's files, links and units (folders
	// left out).
	Rendered int `json:"rendered"`
	// AsRendered counts those an upgraded node finds in the image as
	// rendered.
	AsRendered int `json:"asRendered"`
	// NotSeen are the others, each with its rule and reason.
	NotSeen []NotSeen `json:"notSeen,omitempty"`
}

// NotSeen is one rendered path an upgraded node does not get from the image.
type NotSeen struct {
	Path string `json:"path"`
	Rule string `json:"rule"`
	Why  string `json:"why"`
}

// maxNamed is how many paths a one-line verdict names before "and N more".
const maxNamed = 3

// String is the one-line verdict: counts, then at most maxNamed paths that
// do not arrive, with their reasons, escaped for a terminal.
func (v NodeView) String() string {
	s := fmt.Sprintf("%d of %d rendered files as rendered", v.AsRendered, v.Rendered)
	if len(v.NotSeen) == 0 {
		return s
	}
	var named []string
	for i, n := range v.NotSeen {
		if i == maxNamed {
			named = append(named, fmt.Sprintf("and %d more", len(v.NotSeen)-maxNamed))
			break
		}
		named = append(named, fmt.Sprintf("%s (%s)", termsafe.Escape(n.Path), n.Why))
	}
	return s + "; not from the image on upgrade, MCO's daemon writes them: " + strings.Join(named, ", ")
}

// SignResult names what was pushed, each by digest; image-sign writes it
// to image/sign.json.
type SignResult struct {
	SignatureRef   string
	AttestationRef string
}

// ReadPredictionRecord reads image-sign's record of the prediction it
// attested (image/prediction.json): rollout checks that its own prediction
// for the image it rolls out is this one. ok is false when there is none
// (image-sign did not run in this workspace).
func (w Workspace) ReadPredictionRecord() (trust.Prediction, bool, error) {
	var r trust.Prediction
	b, err := os.ReadFile(w.PredictionPath())
	if errors.Is(err, os.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("reading image-sign's prediction: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, false, fmt.Errorf("decoding %s: %w", w.PredictionPath(), err)
	}
	return r, true, nil
}
