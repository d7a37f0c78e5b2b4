package osimage

import (
	"fmt"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// TestNodeViewNamesWhatAnUpgradedNodeDoesNotGetFromTheImage plans a
// rendered config with files in /etc, /usr, /var, /opt (a link into /var
// on CoreOS) and /run, a link and a folder, and asserts the verdict:
// folders are not counted, /etc and /usr files arrive as rendered, the
// /var and /opt files and the /run file are named with their rule and
// reason.
func TestNodeViewNamesWhatAnUpgradedNodeDoesNotGetFromTheImage(t *testing.T) {
	cfg := igntypes.Config{Storage: igntypes.Storage{
		Files: []igntypes.File{
			imagetest.File(t, "/etc/chrony.conf", "server a\n", 0o644, false),
			imagetest.File(t, "/usr/lib/kiln/marker", "m\n", 0o644, false),
			imagetest.File(t, "/var/lib/kiln/state", "s\n", 0o644, false),
			imagetest.File(t, "/opt/vendor/tool", "t\n", 0o755, false),
			imagetest.File(t, "/run/kiln/flag", "f\n", 0o644, false),
		},
		Directories: []igntypes.Directory{{Node: igntypes.Node{Path: "/var/lib/kiln"}}},
		Links: []igntypes.Link{{Node: igntypes.Node{Path: "/etc/localtime"},
			LinkEmbedded1: igntypes.LinkEmbedded1{Target: imagetest.Ptr("../usr/share/zoneinfo/UTC")}}},
	}}
	plan, err := imagebuild.PlanLayer(imagetest.RenderedMC(t, "rendered-worker-view", cfg))
	if err != nil {
		t.Fatal(err)
	}
	got := nodeView(plan)
	// The plan adds the MCD's currentconfig file to what the config names.
	var rendered int
	for _, e := range plan.Entries {
		if e.Type != '5' {
			rendered++
		}
	}
	want := work.NodeView{Rendered: rendered + 1, AsRendered: rendered - 2, NotSeen: []work.NotSeen{
		{Path: "/run/kiln/flag", Rule: imagebuild.RuleMCODropped, Why: why[imagebuild.RuleMCODropped]},
		{Path: "/var/lib/kiln/state", Rule: imagebuild.RuleMCOVar, Why: why[imagebuild.RuleMCOVar]},
		{Path: "/var/opt/vendor/tool", Rule: imagebuild.RuleMCOVar, Why: why[imagebuild.RuleMCOVar]},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("node view (-want +got):\n%s", diff)
	}
	line := got.String()
	for _, s := range []string{fmt.Sprintf("%d of %d rendered files as rendered", rendered-2, rendered+1), "/run/kiln/flag (in a top-level folder", "/var/lib/kiln/state (under /var"} {
		if !strings.Contains(line, s) {
			t.Errorf("verdict %q lacks %q", line, s)
		}
	}
}

// TestNodeViewNamesAtMostThreePaths asserts the one-line verdict names
// three paths, then how many more, and escapes control characters.
func TestNodeViewNamesAtMostThreePaths(t *testing.T) {
	v := work.NodeView{Rendered: 9, AsRendered: 4}
	for i := range 5 {
		v.NotSeen = append(v.NotSeen, work.NotSeen{Path: fmt.Sprintf("/var/f%d\x1b[2J", i), Rule: imagebuild.RuleMCOVar, Why: why[imagebuild.RuleMCOVar]})
	}
	s := v.String()
	if !strings.Contains(s, "and 2 more") || strings.Contains(s, "/var/f3") || strings.ContainsRune(s, 0x1b) {
		t.Fatalf("verdict %q: want three paths, \"and 2 more\", no raw escape", s)
	}
}
