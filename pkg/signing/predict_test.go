package signing

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// TestSignStepAttestsThePrediction: image-sign, the first stage that knows
// the digest, predicts MCO's next rendered name from render's
// mco-inputs.json and records it as PREDICTED_RENDERED_NAME, in
// image/prediction.json and in the provenance's runDetails.byproducts.
func TestSignStepAttestsThePrediction(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := context.Background()
	image := imagetest.PushRandomImage(t, reg.Host, "kiln/os:v1")
	work, results := t.TempDir(), t.TempDir()
	ws := workspace.Workspace{Root: work}
	writeJSON := func(path string, v any) {
		b, _ := json.Marshal(v)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeJSON(filepath.Join(ws.StageDir(workspace.StageImageSign), "build.json"), trust.Record{Ref: image, Inputs: imagetest.NodeInputs(t, reg.Host)})
	role := map[string]string{mcrender.RoleLabel: "worker"}
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"},
		Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: &metav1.LabelSelector{MatchLabels: role}}}
	in, err := mcrender.NewMCOInputs(pool, []*mcfgv1.MachineConfig{{ObjectMeta: metav1.ObjectMeta{Name: "00-worker", Labels: role},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)}, KernelArguments: []string{"quiet"}}}},
		mcrender.Defaults{OSImageURL: "quay.io/base/os@sha256:" + strings.Repeat("1", 64)})
	if err != nil {
		t.Fatal(err)
	}
	writeJSON(ws.MCOInputsPath(), in)
	want, err := mcrender.Predict(ctx, in, image)
	if err != nil {
		t.Fatal(err)
	}

	keys := imagetest.NewCosignKeyPass(t, "pw")
	keyPath := filepath.Join(t.TempDir(), "cosign.key")
	if err := os.WriteFile(keyPath, keys.Priv, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KILN_TEST_SIGN_PW", "pw")
	var out bytes.Buffer
	o := &SignOptions{Options: step.Options{Work: work, ResultsDir: results, Pool: "worker"}, RegistryOptions: registry.RegistryOptions{Insecure: []string{reg.Host}},
		AttestOptions: sign.AttestOptions{SigningOptions: sign.SigningOptions{KeyPath: keyPath, PasswordEnv: "KILN_TEST_SIGN_PW"}, RunID: "run-1"},
		Image:         image, Predict: mcrender.PredictFromWorkspace}
	if err := o.Run(ctx, step.Streams{Out: &out, Err: &out}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got, _ := os.ReadFile(filepath.Join(results, "PREDICTED_RENDERED_NAME"))
	if string(got) != want.Config.Name {
		t.Errorf("PREDICTED_RENDERED_NAME %q, want %s", got, want.Config.Name)
	}
	rec, ok, err := ws.ReadPredictionRecord()
	if err != nil || !ok || rec.Name != want.Config.Name || rec.Image != image || rec.Hash != want.Hash {
		t.Errorf("image/prediction.json %+v (%v %v)", rec, ok, err)
	}
	v, err := sign.LoadVerifier(keys.PubPath)
	if err != nil {
		t.Fatal(err)
	}
	stmts, err := sign.VerifiedStatements(ctx, registry.Remote{Insecure: []string{reg.Host}}, image, v)
	if err != nil || len(stmts) != 1 {
		t.Fatalf("attestations: %d, %v", len(stmts), err)
	}
	b, _ := json.Marshal(stmts[0].Predicate)
	var pred struct {
		RunDetails struct {
			Byproducts []struct {
				Name   string            `json:"name"`
				URI    string            `json:"uri"`
				Digest map[string]string `json:"digest"`
			} `json:"byproducts"`
		} `json:"runDetails"`
	}
	if err := json.Unmarshal(b, &pred); err != nil || len(pred.RunDetails.Byproducts) != 1 {
		t.Fatalf("byproducts %s (%v)", b, err)
	}
	bp := pred.RunDetails.Byproducts[0]
	if bp.Name != PredictedConfigByproduct || bp.URI != "machineconfig:"+want.Config.Name || "sha256:"+bp.Digest["sha256"] != want.Hash {
		t.Errorf("byproduct %+v, want %s %s", bp, want.Config.Name, want.Hash)
	}
	// The prediction is no input: the attestation still binds the build's inputs exactly.
	if got, err := trust.InputsOf(stmts[0]); err != nil || imagetest.NodeInputs(t, reg.Host).Diff(got) != "" {
		t.Errorf("inputs of the attestation: %v %v", got, err)
	}
}
