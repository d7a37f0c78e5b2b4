package install

import (
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/prune"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// pruneStage runs `kiln-steps prune --apply` as kiln-prune on a kiln
// repository holding one kiln-signed image nothing names: it is deleted.
func pruneStage(t *testing.T, e *env.Env, kubeconfig string) {
	key := imagetest.NewCosignKey(t)
	r := registry.Remote{Insecure: []string{e.Registry.Host}}
	inputs, err := trust.NodeImage{Pool: "rbac", BaseImage: e.Registry.Ref("rbac/base@sha256:" + strings.Repeat("c", 64)), RenderedName: "rendered-rbac-1",
		RenderedHash: "sha256:" + strings.Repeat("b", 64), Source: "https://github.com/kiln-dev/kiln", Builder: "fast"}.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	img := pushRandom(t, e.Registry.Ref("rbac/prune:kiln-"+inputs.Fingerprint()))
	key.Sign(t, r, img, inputs)
	work, results := t.TempDir(), t.TempDir()
	code, out := runStep(t, prune.Stage, "--kubeconfig", kubeconfig, "--work", work, "--results-dir", results,
		"--public-key", key.PubPath, "--insecure-registry", e.Registry.Host, "--apply", "--repository", e.Registry.Ref("rbac/prune"))
	if code != exitcode.ExitOK {
		t.Fatalf("prune as kiln-prune: exit %d\n%s", code, out)
	}
	if n := result(t, results, prune.ResultDeleted); n != "1" {
		t.Errorf("prune deleted %s images, want 1:\n%s", n, out)
	}
}
