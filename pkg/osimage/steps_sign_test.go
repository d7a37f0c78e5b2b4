package osimage

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	signlib "github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/signing"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// TestBuildSignVerifySteps runs image-build, image-sign and verify as the
// pipeline does, through the workspace and result files.
func TestBuildSignVerifySteps(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := context.Background()
	base, _ := random.Image(1024, 1)
	base = env.WithKernel(t, base)
	baseRef, _ := name.ParseReference(reg.Host+"/base/os:1", name.Insecure)
	if err := remote.Write(baseRef, base); err != nil {
		t.Fatal(err)
	}
	work, results := t.TempDir(), t.TempDir()
	src := "data:,hello"
	raw, _ := json.Marshal(igntypes.Config{Ignition: igntypes.Ignition{Version: "3.5.0"},
		Storage: igntypes.Storage{Files: []igntypes.File{{Node: igntypes.Node{Path: "/etc/motd"},
			FileEmbedded1: igntypes.FileEmbedded1{Contents: igntypes.Resource{Source: &src}}}}}})
	mc := &mcfgv1.MachineConfig{Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}}}
	mc.Kind, mc.Name = "MachineConfig", "rendered-worker-s"
	b, _ := json.Marshal(mc)
	os.MkdirAll(filepath.Join(work, "render"), 0o755)
	os.WriteFile(filepath.Join(work, "render", "rendered.json"), b, 0o644)

	common := step.Options{Work: work, ResultsDir: results, Pool: "worker"}
	reg1 := registry.RegistryOptions{Insecure: []string{reg.Host}}
	var out bytes.Buffer
	streams := step.Streams{Out: &out, Err: &out}
	build := &BuildOptions{Options: common, RegistryOptions: reg1, Base: baseRef.String(), Repository: reg.Host + "/kiln/os", Source: imagebuild.DefaultSource}
	if err := build.Run(ctx, streams); err != nil {
		t.Fatal(err)
	}
	// The Pipeline passes image-build's IMAGE_URL@IMAGE_DIGEST.
	image := readResult(t, results, "IMAGE_URL") + "@" + readResult(t, results, "IMAGE_DIGEST")

	keys := imagetest.NewCosignKeyPass(t, "kiln-secret-pass-7731")
	keyDir := t.TempDir()
	os.WriteFile(filepath.Join(keyDir, "cosign.key"), keys.Priv, 0o600)
	os.WriteFile(filepath.Join(keyDir, "cosign.password"), append(keys.Pass, '\n'), 0o600)
	sign := &signing.SignOptions{Options: common, RegistryOptions: reg1, Image: image, AttestOptions: signlib.AttestOptions{RunID: "run-1",
		SigningOptions: sign.SigningOptions{KeyPath: filepath.Join(keyDir, "cosign.key"), PasswordEnv: "KILN_UNSET_PW"}, PasswordFile: filepath.Join(keyDir, "cosign.password")}}
	if err := sign.Run(ctx, streams); err != nil {
		t.Fatal(err)
	}
	if r := readResult(t, results, "SIGNATURE_REF"); !strings.HasPrefix(r, reg.Host+"/kiln/os:sha256-") || !strings.Contains(r, ".sig@sha256:") {
		t.Errorf("SIGNATURE_REF %q", r)
	}
	scanForSecrets(t, out.String(), keys, work, results)

	verify := &signing.VerifyOptions{Options: common, RegistryOptions: reg1, Image: image, IdentityOptions: step.IdentityOptions{PublicKey: keys.PubPath}, NodeKeyPath: signlib.DefaultNodeKeyPath}
	if err := verify.Run(ctx, streams); err != nil {
		t.Fatalf("verify: %v\n%s", err, out.String())
	}
	if v := readResult(t, results, "VERIFIED"); v != "true" {
		t.Errorf("VERIFIED %q", v)
	}
	if _, err := os.Stat(filepath.Join(work, "image", "policy.json")); err != nil {
		t.Error(err)
	}
	checkNodeLintAttested(t, registry.Remote{Insecure: []string{reg.Host}}, image, keys.PubPath)
	verify.PublicKey = imagetest.NewCosignKey(t).PubPath
	if err := verify.Run(ctx, streams); err == nil {
		t.Fatal("verify with a wrong key passed")
	}
	if v := readResult(t, results, "VERIFIED"); v != "false" {
		t.Errorf("VERIFIED after refusal %q", v)
	}

	// image-sign refuses to attest an image build.json does not describe.
	other := &signing.SignOptions{Options: common, RegistryOptions: reg1, Image: reg.Host + "/kiln/os@sha256:" + strings.Repeat("0", 64), AttestOptions: sign.AttestOptions}
	if err := other.Run(ctx, streams); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("sign of another image: %v", err)
	}
}

func readResult(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// scanForSecrets fails when the key, its password or any line of the key
// PEM shows up in the output, the workspace or the results.
func scanForSecrets(t *testing.T, output string, keys imagetest.CosignKey, dirs ...string) {
	t.Helper()
	needles := []string{string(keys.Pass), "PRIVATE KEY"}
	for _, line := range strings.Split(string(keys.Priv), "\n") {
		if len(line) > 20 {
			needles = append(needles, line)
		}
	}
	haystacks := map[string]string{"step output": output}
	for _, d := range dirs {
		filepath.Walk(d, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				haystacks[p] = string(b)
			}
			return nil
		})
	}
	for where, hay := range haystacks {
		for _, n := range needles {
			if strings.Contains(hay, n) {
				t.Fatalf("%s contains key material (%.12q…)", where, n)
			}
		}
	}
}

// checkNodeLintAttested: image-sign's attestation carries image-build's
// node import check (inputs and byproduct), which is what rollout
// requires.
func checkNodeLintAttested(t *testing.T, r registry.Remote, image, pubPath string) {
	t.Helper()
	v, err := signlib.LoadVerifier(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := signlib.RequireNodeLint(context.Background(), r, image, v); err != nil {
		t.Errorf("rollout's node check requirement: %v", err)
	}
	sts, err := signlib.VerifiedStatements(context.Background(), r, image, v)
	if err != nil || len(sts) != 1 {
		t.Fatalf("statements %d, %v", len(sts), err)
	}
	b, _ := json.Marshal(sts[0].Predicate)
	if !strings.Contains(string(b), `"name":"`+trust.NodeLintByproduct+`"`) || !strings.Contains(string(b), "kiln:node-lint?rules=kiln-nodeimport%2F1") || !strings.Contains(string(b), "pass=true") {
		t.Errorf("the attestation has no passing node-lint byproduct: %s", b)
	}
}
