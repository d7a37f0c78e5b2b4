package osimage

import (
	"archive/tar"
	"fmt"
	"strings"

	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/termsafe"
)

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

// why is the short reason of each rule that keeps a file from the node.
var why = map[string]string{
	imagebuild.RuleMCOVar:     "under /var, which a node takes from an image on first install only",
	imagebuild.RuleMCODropped: "in a top-level folder the node's import drops or empties",
}

// nodeView is the plan's view from an upgraded node: every non-folder
// entry arrives as rendered except the ones the node rules warned about.
func nodeView(p *imagebuild.Plan) NodeView {
	if p == nil {
		return NodeView{}
	}
	folder := map[string]bool{}
	var v NodeView
	for _, e := range p.Entries {
		if e.Type == tar.TypeDir {
			folder[e.Path] = true
			continue
		}
		v.Rendered++
	}
	v.AsRendered = v.Rendered
	for _, f := range p.Warnings {
		reason, ok := why[f.Rule]
		if !ok || folder[f.Path] {
			continue
		}
		if f.Rule == imagebuild.RuleMCODropped {
			// Left out of the layer: not among the entries counted.
			v.Rendered++
		} else {
			v.AsRendered--
		}
		v.NotSeen = append(v.NotSeen, NotSeen{Path: f.Path, Rule: f.Rule, Why: reason})
	}
	return v
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

// verdict is the NODE_CHECK result: the check's outcome (l), then what
// an upgraded node sees of the rendered config (view).
func verdict(l *imagebuild.NodeLint, view NodeView) string {
	switch {
	case l == nil:
		return ""
	case l.Attested:
		return fmt.Sprintf("pass (%s, attested); %s", l.Rules, view)
	default:
		return fmt.Sprintf("pass (%s), %d warning(s); %s", l.Rules, len(l.Warnings), view)
	}
}
