package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/taskresult"
	"github.com/kiln-dev/kiln/pkg/work"
)

const kilnImage = "registry.test/kiln/os@sha256:abababababababababababababababababababababababababababababababab"

var testDefaults = mcrender.Defaults{OSImageURL: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + strings.Repeat("1", 64),
	ExtensionsImage: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + strings.Repeat("2", 64), ReleaseVersion: "4.20.0"}

// TestMCOInputsSavedByRenderStep: the render step leaves what the
// prediction reads, and it reads back to the same prediction.
func TestMCOInputsSavedByRenderStep(t *testing.T) {
	pool := workerPool()
	mc := workerMC("00-worker", `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/a","mode":420,"contents":{"source":"data:,a"}}]}}`)
	mc.Spec.KernelArguments = []string{"quiet"}
	all := []*mcfgv1.MachineConfig{mc}
	in, err := mcrender.NewMCOInputs(pool, all, testDefaults)
	if err != nil {
		t.Fatal(err)
	}
	res, err := mcrender.Render(context.Background(), mcrender.Request{Pool: pool, Configs: all, Defaults: testDefaults})
	if err != nil {
		t.Fatal(err)
	}
	ws := work.Workspace{Root: t.TempDir()}
	r := taskresult.NewResults(t.TempDir())
	if err := (&Output{Result: res, MCO: in, Results: map[string]string{"RENDERED_NAME": res.Config.Name}}).Write(ws, r); err != nil {
		t.Fatal(err)
	}
	back, err := ws.ReadMCOInputs()
	if err != nil {
		t.Fatal(err)
	}
	p1, err1 := mcrender.Predict(context.Background(), in, kilnImage)
	p2, err2 := mcrender.Predict(context.Background(), back, kilnImage)
	if err1 != nil || err2 != nil || p1.Config.Name != p2.Config.Name {
		t.Errorf("prediction before saving %v (%v), after %v (%v)", p1, err1, p2, err2)
	}
	if _, err := os.Stat(filepath.Join(ws.Root, "render", work.MCOInputsFile)); err != nil {
		t.Error(err)
	}
}
