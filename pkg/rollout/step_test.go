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

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/nodeimport"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/trust"
	workspace "github.com/kiln-dev/kiln/pkg/work"
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
		Renderer: mcosim.KilnRenderer{Defaults: mcrender.Defaults{OSImageURL: payloadImage}}, StepDelay: 20 * time.Millisecond})
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
	unlinted := pushImage(t, e.Registry.Ref("kiln/steps:unlinted"))
	r := registry.Remote{Insecure: []string{e.Registry.Host}}
	for image, lint := range map[string]string{signed: nodeimport.RulesVersion, unlinted: ""} {
		inputs, err := trust.NodeImage{Pool: "worker", BaseImage: image, RenderedName: "rendered-worker-1",
			RenderedHash: "sha256:" + strings.Repeat("b", 64), Source: "https://github.com/kiln-dev/kiln", Builder: "fast",
			NodeLint: lint}.Inputs()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sign.Sign(t.Context(), r, sign.SignInput{Image: image, Key: keys.PrivateBytes, Password: []byte("pw"), Inputs: inputs}); err != nil {
			t.Fatal(err)
		}
	}

	run := func(image string) (int, string, map[string]string, string) {
		return h.runStep("steps", image, kubeconfig, pub, e.Registry.Host)
	}

	code, out, res, _ := run(unsigned)
	if code != exitcode.ExitRefused || res["ROLLOUT_STATE"] != rollout.StateRefused || !strings.Contains(out, "refusing to roll out "+unsigned+" to pool steps") {
		t.Fatalf("unsigned image: exit %d, results %v\n%s", code, res, out)
	}
	if mc := h.kilnMC("steps"); mc != nil {
		t.Fatalf("unsigned image: kiln's MachineConfig was written: %v", mc.Spec.OSImageURL)
	}

	// Signed by the key, but its attestation names no node import check:
	// refused before any write.
	code, out, res, _ = run(unlinted)
	if code != exitcode.ExitRefused || res["ROLLOUT_STATE"] != rollout.StateRefused || !strings.Contains(out, "passed kiln's node import check") {
		t.Fatalf("image without a node check: exit %d, results %v\n%s", code, res, out)
	}
	if mc := h.kilnMC("steps"); mc != nil {
		t.Fatalf("image without a node check: kiln's MachineConfig was written: %v", mc.Spec.OSImageURL)
	}

	code, out, res, work := run(signed)
	if code != exitcode.ExitOK || res["ROLLOUT_STATE"] != rollout.StateSucceeded || res["UPDATED_NODES"] != "2" || res["DRIFT_GATE"] != rollout.GatePassed {
		t.Fatalf("signed image: exit %d, results %v\n%s", code, res, out)
	}
	if !strings.Contains(out, "NODE") || !strings.Contains(out, "STATE") || !strings.Contains(out, "2/2 nodes on sha256:") {
		t.Errorf("no node table or closing line in the step output:\n%s", out)
	}
	var tl []workspace.Event
	b, err := os.ReadFile(filepath.Join(work, "rollout", "timeline.json"))
	if err != nil || json.Unmarshal(b, &tl) != nil || len(updatedNodes(tl)) != 2 {
		t.Errorf("timeline.json: %v, %d events", err, len(tl))
	}

	// A prediction other than the one image-sign attested is refused
	// before anything is written.
	h.poolWith("attested", 1, poolSpec{})
	code, out, res, _ = h.runStepWith("attested", signed, kubeconfig, pub, e.Registry.Host, func(work string) {
		b, _ := json.Marshal(trust.Prediction{Image: signed, Name: "rendered-attested-0123"})
		path := filepath.Join(work, "image", workspace.PredictionFile)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if code != exitcode.ExitFailure || res["ROLLOUT_STATE"] != rollout.StateRefused || !strings.Contains(out, "image-sign attested rendered-attested-0123 for "+signed) {
		t.Errorf("another attested prediction: exit %d, results %v\n%s", code, res, out)
	}
	if mc := h.kilnMC("attested"); mc != nil {
		t.Errorf("kiln's MachineConfig was written for a refused prediction")
	}

	// The drift gate through the step: mcosim's render quirk on one pool.
	h.poolWith("stepdrift", 2, poolSpec{annotations: quirk, kargs: unsorted})
	code, out, res, work = h.runStep("stepdrift", signed, kubeconfig, pub, e.Registry.Host)
	if code != exitcode.ExitDrift || res["ROLLOUT_STATE"] != rollout.StateDriftDetected || res["DRIFT_GATE"] != rollout.GateDrift ||
		!strings.Contains(out, "drift detected") {
		t.Fatalf("drift: exit %d, results %v\n%s", code, res, out)
	}
	diff, err := os.ReadFile(filepath.Join(work, "rollout", workspace.DriftText))
	if err != nil || !strings.Contains(string(diff), "- spec.kernelArguments (kernel argument order)") || !strings.Contains(string(diff), "set by: MachineConfig 50-stepdrift-kargs") {
		t.Errorf("rollout/drift.txt (%v):\n%s", err, diff)
	}
	summary := runReport(t, work, "stepdrift")
	flat := strings.Join(strings.Fields(summary), " ") // the report wraps at 100 columns
	for _, want := range []string{
		"kiln: pool stepdrift; Failed at rollout;",
		"rollout Failed error: rollout of",
		"drift gate: MCO rendered rendered-stepdrift-",
		"DriftDetected=True (RenderedConfigDiffers): pool stepdrift: MCO rendered rendered-stepdrift-",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("report lacks %q:\n%s", want, summary)
		}
	}
	t.Logf("the DriftDetected report:\n%s\nrollout/drift.txt:\n%s", summary, diff)
}

// runReport runs the finally task's report on work, as after a failed rollout.
func runReport(t *testing.T, work, pool string) string {
	var out bytes.Buffer
	code := cli.Execute(t.Context(), cli.NewSteps(),
		[]string{"report", "--pool", pool, "--work", work, "--results-dir", t.TempDir(), "--aggregate", "Failed",
			"render=Succeeded", "kmod-build=None", "kmod-sign=None", "image-build=Succeeded", "image-sign=Succeeded", "verify=Succeeded", "rollout=Failed", "bootimages=None"},
		&out, &out)
	if code != exitcode.ExitOK {
		t.Fatalf("report: exit %d\n%s", code, out.String())
	}
	return out.String()
}

// runStep runs `kiln-steps rollout` for pool in a fresh work folder
// holding what render saves for the drift gate.
func (h *harness) runStep(pool, image, kubeconfig, pub, registryHost string, flags ...string) (int, string, map[string]string, string) {
	return h.runStepWith(pool, image, kubeconfig, pub, registryHost, func(string) {}, flags...)
}

// runStepWith is runStep with prepare called on the work folder first.
func (h *harness) runStepWith(pool, image, kubeconfig, pub, registryHost string, prepare func(work string), flags ...string) (int, string, map[string]string, string) {
	t := h.t
	work, results := t.TempDir(), t.TempDir()
	prepare(work)
	b, err := json.Marshal(h.mcoInputs(pool))
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace.Workspace{Root: work}
	if err := os.MkdirAll(filepath.Dir(ws.MCOInputsPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ws.MCOInputsPath(), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := cli.Execute(t.Context(), cli.NewSteps(),
		append([]string{"rollout", "--source", "cluster", "--kubeconfig", kubeconfig, "--pool", pool, "--image", image,
			"--public-key", pub, "--insecure-registry", registryHost, "--work", work, "--results-dir", results, "--timeout", "1m"}, flags...),
		&out, &errb)
	res := map[string]string{}
	for _, n := range []string{"ROLLOUT_STATE", "UPDATED_NODES", "DRIFT_GATE"} {
		b, _ := os.ReadFile(filepath.Join(results, n))
		res[n] = string(b)
	}
	return code, out.String() + errb.String(), res, work
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
