package rollout_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/cmd/cli"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/pkg/trust"
	workspace "github.com/kiln-dev/kiln/pkg/work"
)

// `rollout --pool master` refuses a work folder rendered or built for
// worker, and an image other than the one the work folder built, naming
// both sides; nothing is verified or written first.
func TestRolloutRefusesImageAndWorkFolderOfAnotherPool(t *testing.T) {
	digest := func(c string) string { return "registry.example/kiln/os@sha256:" + strings.Repeat(c, 64) }
	workerImage, masterImage := digest("a"), digest("b")
	cases := []struct {
		name           string
		renderedFor    string // pool of render's inputs; "" for none
		builtFor, ref  string // image/build.json; "" for none
		image          string
		wantInMessages []string
	}{
		{"render for worker", "worker", "", "", masterImage,
			[]string{"refusing to roll out to pool master", "is for pool worker"}},
		{"image built for worker", "", "worker", workerImage, workerImage,
			[]string{"refusing to roll out to pool master", "was built for pool worker"}},
		{"render and image for worker", "worker", "worker", workerImage, workerImage,
			[]string{"pool master", "pool worker"}},
		{"another image than the work folder's", "master", "master", masterImage, workerImage,
			[]string{"refusing to roll out " + workerImage + " to pool master", "is " + masterImage}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			work, results := t.TempDir(), t.TempDir()
			ws := workspace.Workspace{Root: work}
			if c.renderedFor != "" {
				writeJSONFile(t, ws.MCOInputsPath(), workspace.MCOInputs{
					Pool:    &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: c.renderedFor}},
					Configs: []*mcfgv1.MachineConfig{{ObjectMeta: metav1.ObjectMeta{Name: "00-" + c.renderedFor}}},
				})
			}
			if c.builtFor != "" {
				in, err := trust.NodeImage{Pool: c.builtFor, BaseImage: digest("c"), RenderedName: "rendered-" + c.builtFor + "-1",
					RenderedHash: "sha256:" + strings.Repeat("d", 64), Source: "https://github.com/kiln-dev/kiln", Builder: "fast"}.Inputs()
				if err != nil {
					t.Fatal(err)
				}
				writeJSONFile(t, filepath.Join(ws.StageDir(workspace.StageImageBuild), "build.json"), trust.Record{Ref: c.ref, Inputs: in})
			}
			var out, errb bytes.Buffer
			code := cli.Execute(t.Context(), cli.NewSteps(), []string{"rollout", "--source", "dir:../../examples/cluster",
				"--pool", "master", "--image", c.image, "--work", work, "--results-dir", results}, &out, &errb)
			if code == exitcode.ExitOK {
				t.Fatalf("exit 0; stdout %s", out.String())
			}
			for _, want := range c.wantInMessages {
				if !strings.Contains(errb.String(), want) {
					t.Errorf("stderr %q lacks %q", errb.String(), want)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(results, "ROLLOUT_STATE")); string(b) != rollout.StateRefused {
				t.Errorf("ROLLOUT_STATE %q, want %s", b, rollout.StateRefused)
			}
			written, _ := filepath.Glob(filepath.Join(ws.StageDir(workspace.StageRollout), "*.yaml"))
			if len(written) != 0 {
				t.Errorf("MachineConfig written despite the refusal: %v", written)
			}
		})
	}
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
