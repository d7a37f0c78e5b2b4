package release

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// repoRoot is the module root: go test runs in this package's folder,
// two below it (runtime.Caller's paths are module paths under -trimpath).
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

var testPublished = &Published{Tag: "v0.2.0",
	Trigger: Pushed{Image: "registry.example:5000/me/kiln-trigger@sha256:" + strings.Repeat("1", 64)},
	Steps:   Pushed{Image: "registry.example:5000/me/kiln-steps@sha256:" + strings.Repeat("2", 64)},
}

// stepsDefaults maps kind/name of each Task and Pipeline to its kiln-image
// param default.
func stepsDefaults(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		if o.GetKind() != "Task" && o.GetKind() != "Pipeline" {
			continue
		}
		params, _, _ := unstructured.NestedSlice(o.Object, "spec", "params")
		for _, p := range params {
			m, _ := p.(map[string]any)
			if m["name"] == "kiln-image" {
				out[o.GetKind()+"/"+o.GetName()], _ = m["default"].(string)
			}
		}
	}
	return out
}

func TestOverlayPinsTriggerDeploymentAndEveryStepsDefaultByDigest(t *testing.T) {
	dir := t.TempDir()
	if err := WriteOverlay(dir, filepath.Join(repoRoot(t), "config"), testPublished, nil); err != nil {
		t.Fatal(err)
	}
	objs, err := Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range cs {
				images = append(images, o.GetName()+"="+c.(map[string]any)["image"].(string))
			}
		}
	}
	if diff := cmp.Diff([]string{"kiln-trigger=" + testPublished.Trigger.Image}, images); diff != "" {
		t.Errorf("Deployment images (-want +got):\n%s", diff)
	}
	defaults := stepsDefaults(t, objs)
	if len(defaults) < 5 {
		t.Fatalf("found kiln-image defaults in %d Tasks and Pipelines, want every kiln Task: %v", len(defaults), defaults)
	}
	for obj, d := range defaults {
		if d != testPublished.Steps.Image {
			t.Errorf("%s: kiln-image default %q, want %q", obj, d, testPublished.Steps.Image)
		}
	}
	b, err := json.Marshal(objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, upstream := range []string{UpstreamRepository + "/" + TriggerName, UpstreamRepository + "/" + StepsName + ":"} {
		if strings.Contains(string(b), upstream) {
			t.Errorf("the rendered install still names %s", upstream)
		}
	}
}

func TestOverlayAppliesJSON6902Patches(t *testing.T) {
	dir := t.TempDir()
	patch := Patch{Target: Target("Deployment", TriggerName),
		Ops: "- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: --settle=1s\n"}
	if err := WriteOverlay(dir, filepath.Join(repoRoot(t), "config"), testPublished, []Patch{patch}); err != nil {
		t.Fatal(err)
	}
	objs, err := Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		args, _ := cs[0].(map[string]any)["args"].([]any)
		if len(args) == 0 || args[len(args)-1] != "--settle=1s" {
			t.Errorf("trigger args %v, want the patch's --settle=1s last", args)
		}
		return
	}
	t.Fatal("no Deployment rendered")
}

func TestWriteOverlayRefusesBadInput(t *testing.T) {
	config := filepath.Join(repoRoot(t), "config")
	bad := *testPublished
	bad.Steps.Image = "registry.example/me/kiln-steps:v1"
	for _, tc := range []struct {
		name, config string
		p            *Published
		patches      []Patch
		want         string
	}{
		{"steps image by tag", config, &bad, nil, "pinning kiln-steps"},
		{"config without kustomization", t.TempDir(), testPublished, nil, "has no kustomization.yaml"},
		{"empty patch", config, testPublished, []Patch{{Ops: " "}}, "patch 0 has no operations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteOverlay(t.TempDir(), tc.config, tc.p, tc.patches)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("WriteOverlay: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestReadPublishedRoundTripsAndRefusesTags(t *testing.T) {
	dir := t.TempDir()
	if err := testPublished.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPublished(filepath.Join(dir, "images.json"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(testPublished, got); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
	env, err := os.ReadFile(filepath.Join(dir, "images.env"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(env), "KILN_STEPS_IMAGE="+testPublished.Steps.Image+"\n") {
		t.Errorf("images.env:\n%s\nlacks the steps image", env)
	}
	bad := *testPublished
	bad.Trigger.Image = "registry.example/me/kiln-trigger:latest"
	if err := bad.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPublished(filepath.Join(dir, "images.json")); err == nil || !strings.Contains(err.Error(), "field trigger.image") {
		t.Errorf("ReadPublished of a tagged trigger image: %v, want an error naming trigger.image", err)
	}
}

func TestMakeInstallRefusesImagesOfAnotherRegistry(t *testing.T) {
	for _, tc := range []struct{ registry, want string }{
		{"registry.example:5000/other", "is not in registry registry.example:5000/other"},
		{"registry.example:5000", "is not in registry registry.example:5000"},
		{"Registry.Example:5000/ME", `registry "Registry.Example:5000/ME"`},
	} {
		_, err := MakeInstall(t.Context(), InstallOptions{Config: filepath.Join(repoRoot(t), "config"), OverlayDir: t.TempDir(),
			Published: testPublished, Registry: tc.registry}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("MakeInstall into %s: %v, want %q", tc.registry, err, tc.want)
		}
	}
	if err := checkRegistry(testPublished, "registry.example:5000/me/"); err != nil {
		t.Errorf("the images' own registry: %v", err)
	}
}

// FuzzReadPublished: any images.json either fails with an error naming
// the file or yields a valid tag and two digest references.
func FuzzReadPublished(f *testing.F) {
	b, _ := json.Marshal(testPublished)
	f.Add(b)
	f.Add([]byte(`{"tag":"v1","trigger":{"image":"x"},"steps":{"image":"y"}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "images.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadPublished(p)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		if CheckTag(got.Tag) != nil || !strings.Contains(got.Trigger.Image, "@sha256:") || !strings.Contains(got.Steps.Image, "@sha256:") {
			t.Errorf("accepted %+v", got)
		}
	})
}
