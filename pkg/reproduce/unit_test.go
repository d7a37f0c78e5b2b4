package reproduce

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	intoto "github.com/in-toto/in-toto-golang/in_toto"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
)

var digestRef = "registry.example.com/os@sha256:" + strings.Repeat("a", 64)

// Validation names every bad flag at once, as a usage error, before any
// I/O; a tag is refused.
func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		set  func(*Options)
		want []string // substrings; none means valid
	}{
		{"defaults with an image", func(*Options) {}, nil},
		{"no image", func(o *Options) { o.Image = "" }, []string{"--image is required"}},
		{"a tag", func(o *Options) { o.Image = "registry.example.com/os:latest" }, []string{"a tag could move"}},
		{"half keyless", func(o *Options) { o.CertificateIdentity = "me" }, []string{"--certificate-oidc-issuer"}},
		{"no buildah", func(o *Options) { o.Buildah = "" }, []string{"--buildah is required"}},
		{"all at once", func(o *Options) { o.Image, o.Buildah = "x", "" }, []string{"--image", "--buildah"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := DefaultOptions()
			o.Image = digestRef
			c.set(o)
			err := o.Validate()
			if len(c.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if exitcode.CodeOf(err) != exitcode.ExitUsage {
				t.Fatalf("Validate() = %v, want a usage error", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v does not name %q", err, w)
				}
			}
		})
	}
	if !DefaultOptions().Deep {
		t.Error("--deep is off by default")
	}
}

// Without an identity nothing can be verified, so nothing is rebuilt:
// a usage error naming --public-key (exit 2, not a refusal: no check
// ran), before any registry is asked.
func TestRunWithoutIdentityIsUsageError(t *testing.T) {
	o := DefaultOptions()
	o.Image = digestRef
	o.PublicKey = filepath.Join(t.TempDir(), "missing.pub")
	err := o.Run(t.Context(), step.Streams{Out: &strings.Builder{}, Err: &strings.Builder{}})
	if exitcode.CodeOf(err) != exitcode.ExitUsage || !errors.Is(err, trust.ErrNoIdentity) || !strings.Contains(err.Error(), "--public-key "+o.PublicKey) {
		t.Errorf("Run() = %v, want a usage error for no identity naming --public-key", err)
	}
}

func statement(t *testing.T, subject name.Digest, in trust.Inputs) intoto.Statement {
	t.Helper()
	b, err := trust.Statement(subject, in, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	var st intoto.Statement
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func nodeInputs(t *testing.T, pool string) trust.Inputs {
	t.Helper()
	in, err := trust.NodeImage{Pool: pool, BaseImage: digestRef, RenderedName: "rendered-" + pool + "-1",
		RenderedHash: "sha256:" + strings.Repeat("b", 64), Source: imagebuild.DefaultSource, Builder: "fast"}.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// Only a kiln build statement about this very digest is used; two kiln
// statements of different inputs are refused, as is none.
func TestPickAttestation(t *testing.T) {
	img, _ := name.NewDigest("registry.example.com/os@sha256:" + strings.Repeat("1", 64))
	other, _ := name.NewDigest("registry.example.com/os@sha256:" + strings.Repeat("2", 64))
	worker, infra := nodeInputs(t, "worker"), nodeInputs(t, "infra")
	foreign := worker
	foreign.BuildType = "https://example.com/other-builder"
	cases := []struct {
		name string
		sts  []intoto.Statement
		want string // "" for worker's inputs, else a substring of the refusal
	}{
		{"one kiln statement", []intoto.Statement{statement(t, img, worker)}, ""},
		{"beside a foreign build type", []intoto.Statement{statement(t, img, foreign), statement(t, img, worker)}, ""},
		{"about another digest", []intoto.Statement{statement(t, other, worker)}, "another digest"},
		{"only a foreign build type", []intoto.Statement{statement(t, img, foreign)}, "other-builder"},
		{"none", nil, "found: none"},
		{"two different kiln builds", []intoto.Statement{statement(t, img, worker), statement(t, img, infra)}, "two different builds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := pick(c.sts, img)
			if c.want == "" {
				if err != nil || a.Kind != "node-image" || a.Inputs.Diff(worker) != "" {
					t.Fatalf("pick() = %+v, %v; want worker's node-image inputs", a, err)
				}
				if want := versionString(trust.BuilderVersion()); a.BuilderVersion != want || want == "" {
					t.Errorf("builder version %q, want %q", a.BuilderVersion, want)
				}
				return
			}
			if exitcode.CodeOf(err) != exitcode.ExitRefused || !strings.Contains(err.Error(), c.want) {
				t.Errorf("pick() = %v, want a refusal naming %q", err, c.want)
			}
		})
	}
}

func machineConfig(name, file string) *mcfgv1.MachineConfig {
	mc := &mcfgv1.MachineConfig{Spec: mcfgv1.MachineConfigSpec{KernelType: "default", Config: runtime.RawExtension{Raw: []byte(
		`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"` + file + `","contents":{"source":"data:,hello"},"mode":420}]}}`)}}}
	mc.APIVersion, mc.Kind, mc.Name = mcfgv1.GroupVersion.String(), "MachineConfig", name
	return mc
}

// The rendered config is read from the image's currentconfig (the top
// layer that has it wins, a whiteout hides it) or from a file such as
// `oc get -o json` writes, and hashed as kiln attests it.
func TestRenderedConfigFromImageOrFile(t *testing.T) {
	mc := machineConfig("rendered-worker-1", "/etc/motd")
	plan, err := imagebuild.PlanLayer(mc)
	if err != nil {
		t.Fatal(err)
	}
	want := imagebuild.RenderedHash(plan)
	current := strings.TrimPrefix(imagebuild.CurrentConfigPath, "/")
	stale := machineConfig("rendered-worker-0", "/etc/old")
	staleJSON, _ := json.Marshal(stale)

	withConfig := image{layers: [][]entry{{file(current, string(staleJSON))}, {file(current, string(plan.CurrentConfig))}}}
	got, hash, err := renderedConfig(withConfig.build(t), "")
	if err != nil || hash != want || got.Name != mc.Name {
		t.Fatalf("from the image: %v, %s, want %s %s", err, hash, mc.Name, want)
	}

	whitedOut := image{layers: [][]entry{{file(current, string(plan.CurrentConfig))},
		{file("etc/machine-config-daemon/.wh.currentconfig", "")}}}
	if _, _, err := renderedConfig(whitedOut.build(t), ""); !errors.Is(err, payload.ErrNotInImage) || !strings.Contains(err.Error(), "--rendered-config") {
		t.Errorf("a whited-out config: %v, want not found with a hint", err)
	}

	// oc get adds metadata the apiserver keeps; the hash is of the
	// normalised form, so it is the same.
	fromCluster := mc.DeepCopy()
	fromCluster.ResourceVersion, fromCluster.UID = "42", "0f0f"
	b, _ := json.MarshalIndent(fromCluster, "", "    ")
	path := filepath.Join(t.TempDir(), "mc.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, hash, err := renderedConfig(nil, path); err != nil || hash != want {
		t.Errorf("from oc get's JSON: %v, %s want %s", err, hash, want)
	}

	// Unknown fields are refused, naming the field.
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), `"spec": {`, `"spec": {"kernelTyp": "x",`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := renderedConfig(nil, path); exitcode.CodeOf(err) != exitcode.ExitInputRejected || !strings.Contains(err.Error(), "kernelTyp") {
		t.Errorf("an unknown field: %v, want input rejected naming kernelTyp", err)
	}
}

// An image whose every layer is the rebuild's, and one that differs,
// give reproduced and not; the summary names the file.
func TestReportSummary(t *testing.T) {
	var rep Report
	rep.add(Result{Image: "a", Identical: true})
	if !rep.Reproduced || rep.Summary(100) != "identical" {
		t.Fatalf("%+v %q", rep, rep.Summary(100))
	}
	rep.add(Result{Image: "b", Diff: &Diff{Layers: []LayerDiff{{Index: 4, Files: []FileDiff{{Path: "/usr/lib/x.ko", Change: "changed"}}}}}})
	rep.add(Result{Image: "c", Identical: true})
	if rep.Reproduced || rep.Summary(100) != "b: layer 4 (1 files: /usr/lib/x.ko)" {
		t.Errorf("%v %q", rep.Reproduced, rep.Summary(100))
	}
	if s := rep.Summary(10); len(s) != 10 {
		t.Errorf("Summary(10) = %q", s)
	}
}

// A long reason wraps within the width.
func TestReasonWraps(t *testing.T) {
	rep := Report{}
	rep.add(Result{Image: "x", Reason: strings.Repeat("word ", 60) + "sha256:" + strings.Repeat("c", 64)})
	var out strings.Builder
	rep.WriteText(&out)
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if len(l) > Width {
			t.Errorf("line over %d columns: %q", Width, l)
		}
	}
}

// A file name from a layer is printed escaped: a name holding an escape
// sequence cannot rewrite the terminal that shows the report.
func TestReportTextEscapesNamesFromLayers(t *testing.T) {
	rep := Report{}
	rep.add(Result{Image: "r.io/x@sha256:1", Diff: &Diff{Layers: []LayerDiff{{Index: 1,
		Files: []FileDiff{{Path: "/etc/\x1b]0;owned\a\u202etxt", Change: "added"}}}}}})
	var out strings.Builder
	rep.WriteText(&out)
	if strings.ContainsAny(out.String(), "\x1b\a\u202e") || !strings.Contains(out.String(), `/etc/\x1b]0;owned\a\u202etxt`) {
		t.Errorf("report text %q: want the file name escaped", out.String())
	}
}
