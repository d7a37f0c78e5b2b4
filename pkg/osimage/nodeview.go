package osimage

import (
	"archive/tar"
	"fmt"

	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/work"
)

// why is the short reason of each rule that keeps a file from the node.
var why = map[string]string{
	imagebuild.RuleMCOVar:     "under /var, which a node takes from an image on first install only",
	imagebuild.RuleMCODropped: "in a top-level folder the node's import drops or empties",
}

// nodeView is the plan's view from an upgraded node: every non-folder
// entry arrives as rendered except the ones the node rules warned about.
func nodeView(p *imagebuild.Plan) work.NodeView {
	if p == nil {
		return work.NodeView{}
	}
	folder := map[string]bool{}
	var v work.NodeView
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
		v.NotSeen = append(v.NotSeen, work.NotSeen{Path: f.Path, Rule: f.Rule, Why: reason})
	}
	return v
}

// verdict is the NODE_CHECK result: the check's outcome (l), then what
// an upgraded node sees of the rendered config (view).
func verdict(l *imagebuild.NodeLint, view work.NodeView) string {
	switch {
	case l == nil:
		return ""
	case l.Attested:
		return fmt.Sprintf("pass (%s, attested); %s", l.Rules, view)
	default:
		return fmt.Sprintf("pass (%s), %d warning(s); %s", l.Rules, len(l.Warnings), view)
	}
}
