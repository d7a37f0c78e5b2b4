package report

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/render"
	"github.com/kiln-dev/kiln/pkg/work"
)

// TestRenderRowCountsWhatRenderMerged: on a cluster whose pool already has
// a rendered config (every cluster-mode run), render reads that config as
// an input but does not merge it; the report's count of MachineConfigs is
// the one render's log prints.
func TestRenderRowCountsWhatRenderMerged(t *testing.T) {
	objs, err := mcrender.LoadDir(filepath.Join("..", "render", "testdata", "golden", "reconcilable-ssh-change"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := render.Run(context.Background(), objs, "worker", &render.Fetcher{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Current == nil {
		t.Fatal("the case has no current rendered config; the test needs one")
	}
	ws := work.Workspace{Root: t.TempDir()}
	writeJSON(t, ws.RenderedPath(), out.Result.Config)
	writeJSON(t, ws.InputsPath(), out.Inputs)
	got, err := details[work.StageRender](ws)
	if err != nil {
		t.Fatal(err)
	}
	// render's log line: "rendered <name> from <n> MachineConfigs".
	want := fmt.Sprintf("%s from %d MachineConfigs;", out.Result.Config.Name, len(out.Result.Inputs))
	if !strings.HasPrefix(got, want) {
		t.Errorf("render row %q, want it to start %q as render's log counts", got, want)
	}
}
