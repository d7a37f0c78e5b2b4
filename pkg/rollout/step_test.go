package rollout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kiln-dev/kiln/cmd/cli"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/render"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/pkg/signing"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/mcosim"
)

// TestRolloutStep runs `kiln-steps rollout` against the real apiserver and
// registry with the real signature policy: a cosign-signed image rolls out
// (results, timeline), an unsigned one is refused before any write.
func TestRolloutStep(t *testing.T) {
	e := env.Start(t, env.Options{Kube: true, Registry: true})
	h := &harness{t: t, kube: e.Kube, admin: e.Kube.Client}
	sim, err := mcosim.Start(context.Background(), mcosim.Options{Client: e.Kube.Client,
		Renderer: mcosim.KilnRenderer{Defaults: render.Defaults{OSImageURL: payloadImage}}, StepDelay: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Stop)
	h.pool("steps", 2)
	kubeconfig := e.Kube.Kubeconfig(t)

	keys, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte("pw"), nil })
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(pub, keys.PublicBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	signed := pushImage(t, e.Registry.Ref("kiln/steps:signed"))
	unsigned := pushImage(t, e.Registry.Ref("kiln/steps:unsigned"))
	r := registry.Remote{Insecure: []string{e.Registry.Host}}
	inputs, err := trust.NodeImage{Pool: "worker", BaseImage: signed, RenderedName: "rendered-worker-1",
		RenderedHash: "sha256:" + strings.Repeat("b", 64), Source: "https://github.com/kiln-dev/kiln", Builder: "fast"}.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signing.Sign(t.Context(), r, signing.SignInput{Image: signed, Key: keys.PrivateBytes, Password: []byte("pw"), Inputs: inputs}); err != nil {
		t.Fatal(err)
	}

	run := func(image string) (int, string, map[string]string, string) {
		work, results := t.TempDir(), t.TempDir()
		var out, errb bytes.Buffer
		code := cli.Execute(t.Context(), cli.NewSteps(),
			[]string{"rollout", "--source", "cluster", "--kubeconfig", kubeconfig, "--pool", "steps", "--image", image,
				"--public-key", pub, "--insecure-registry", e.Registry.Host, "--work", work, "--results-dir", results, "--timeout", "1m"},
			&out, &errb)
		res := map[string]string{}
		for _, n := range []string{"ROLLOUT_STATE", "UPDATED_NODES"} {
			b, _ := os.ReadFile(filepath.Join(results, n))
			res[n] = string(b)
		}
		return code, out.String() + errb.String(), res, work
	}

	code, out, res, _ := run(unsigned)
	if code != step.ExitRefused || res["ROLLOUT_STATE"] != rollout.StateRefused || !strings.Contains(out, "refusing to roll out "+unsigned+" to pool steps") {
		t.Fatalf("unsigned image: exit %d, results %v\n%s", code, res, out)
	}
	if mc := h.kilnMC("steps"); mc != nil {
		t.Fatalf("unsigned image: kiln's MachineConfig was written: %v", mc.Spec.OSImageURL)
	}

	code, out, res, work := run(signed)
	if code != step.ExitOK || res["ROLLOUT_STATE"] != rollout.StateSucceeded || res["UPDATED_NODES"] != "2" {
		t.Fatalf("signed image: exit %d, results %v\n%s", code, res, out)
	}
	if !strings.Contains(out, "NAME") || !strings.Contains(out, "UPDATEPREPARED") {
		t.Errorf("no progress table in the step output:\n%s", out)
	}
	var tl []rollout.Event
	b, err := os.ReadFile(filepath.Join(work, "rollout", "timeline.json"))
	if err != nil || json.Unmarshal(b, &tl) != nil || len(updatedNodes(tl)) != 2 {
		t.Errorf("timeline.json: %v, %d events", err, len(tl))
	}
}

func pushImage(t *testing.T, tag string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(tag, name.Insecure)
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return ref.Context().Digest(d.String()).String()
}
