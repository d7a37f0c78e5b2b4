package mcrender

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/work"
)

const kilnImage = "registry.test/kiln/os@sha256:abababababababababababababababababababababababababababababababab"

func poolSelecting(name string, roles ...string) *mcfgv1.MachineConfigPool {
	sel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: RoleLabel, Operator: metav1.LabelSelectorOpIn, Values: roles}}}
	if len(roles) == 1 {
		sel = &metav1.LabelSelector{MatchLabels: map[string]string{RoleLabel: roles[0]}}
	}
	return &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: sel}}
}

// testMC is an MC of role with an Ignition config and kernel arguments.
func testMC(name, role, config string, kargs ...string) *mcfgv1.MachineConfig {
	if config == "" {
		config = `{"ignition":{"version":"3.5.0"}}`
	}
	return &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{RoleLabel: role}},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(config)}, KernelArguments: kargs}}
}

func fileConfig(path, data string) string {
	return `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"` + path + `","mode":420,"contents":{"source":"data:,` + data + `"}}]}}`
}

// TestPredictionIsRenderWithTheImage: the prediction is kiln's own rendered
// spec with the image as osImageURL — what kiln baked, under kiln's image —
// named by MCO's rule; kiln's MC takes the place of an older one.
func TestPredictionIsRenderWithTheImage(t *testing.T) {
	pool := poolSelecting("worker", "worker")
	old, err := OSImageConfig(pool, "registry.test/kiln/os@sha256:"+strings.Repeat("0", 64))
	if err != nil {
		t.Fatal(err)
	}
	all := []*mcfgv1.MachineConfig{testMC("00-worker", "worker", fileConfig("/etc/a", "a"), "quiet"), testMC("50-worker", "worker", "", "audit=1"), old}
	res, err := Render(context.Background(), Request{Pool: pool, Configs: all, Defaults: sizeDefaults})
	if err != nil {
		t.Fatal(err)
	}
	in, err := NewMCOInputs(pool, all, sizeDefaults)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Predict(context.Background(), in, kilnImage)
	if err != nil {
		t.Fatal(err)
	}
	want := res.Config.Spec
	want.OSImageURL = kilnImage
	if d := cmp.Diff(want, p.Config.Spec); d != "" {
		t.Errorf("predicted spec differs from the rendered one with the image (-want +got):\n%s", d)
	}
	name, _ := RenderedName("worker", want)
	if p.Config.Name != name || p.Config.Name == res.Config.Name {
		t.Errorf("predicted name %s, want %s (rendered %s)", p.Config.Name, name, res.Config.Name)
	}
	var names []string
	for _, mc := range p.Inputs {
		names = append(names, mc.Name)
		if mc.Name == OSImageConfigName("worker") && mc.Spec.OSImageURL != kilnImage {
			t.Errorf("the old kiln MachineConfig was merged: %s", mc.Spec.OSImageURL)
		}
	}
	if !slices.Equal(names, []string{"00-worker", "50-worker", "99-kiln-worker-os-image"}) {
		t.Errorf("inputs %v", names)
	}
	if !strings.HasPrefix(p.Hash, "sha256:") || len(p.Hash) != len("sha256:")+64 {
		t.Errorf("hash %q", p.Hash)
	}
}

// TestPredictSelectsAsMCO: where MCO's selection differs from kiln's render
// on purpose (doc.go), the prediction follows MCO. Each case is an MCO
// behaviour the drift gate must not report as drift.
func TestPredictSelectsAsMCO(t *testing.T) {
	workerImage := "registry.test/kiln/worker@sha256:" + strings.Repeat("c", 64)
	workerPool := poolSelecting("worker", "worker")
	workerMC, _ := OSImageConfig(workerPool, workerImage)
	for _, tc := range []struct {
		name       string
		pool       *mcfgv1.MachineConfigPool
		configs    []*mcfgv1.MachineConfig
		wantInputs []string
		check      func(t *testing.T, p *Prediction)
	}{{
		name:    "a custom pool selecting the worker role merges worker's kiln MachineConfig too (MCO does not know kiln.dev/managed)",
		pool:    poolSelecting("infra", "worker", "infra"),
		configs: []*mcfgv1.MachineConfig{testMC("00-worker", "worker", ""), workerMC, testMC("00-infra", "infra", "")},
		// Worker-role MCs first, then the rest: infra's own kiln MC still wins osImageURL.
		wantInputs: []string{"00-worker", "99-kiln-worker-os-image", "00-infra", "99-kiln-infra-os-image"},
		check: func(t *testing.T, p *Prediction) {
			if p.Config.Spec.OSImageURL != kilnImage {
				t.Errorf("osImageURL %s, want infra's image", p.Config.Spec.OSImageURL)
			}
		},
	}, {
		name:       "remote sources are not fetched: MCO leaves them to the node's Ignition",
		pool:       workerPool,
		configs:    []*mcfgv1.MachineConfig{testMC("00-worker", "worker", `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/r","contents":{"source":"http://127.0.0.1:1/unreachable"}}]}}`)},
		wantInputs: []string{"00-worker", "99-kiln-worker-os-image"},
		check: func(t *testing.T, p *Prediction) {
			if !strings.Contains(string(p.Config.Spec.Config.Raw), `"source":"http://127.0.0.1:1/unreachable"`) {
				t.Errorf("the remote source was not kept: %s", p.Config.Spec.Config.Raw)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := NewMCOInputs(tc.pool, tc.configs, sizeDefaults)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Predict(context.Background(), in, kilnImage)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, mc := range p.Inputs {
				names = append(names, mc.Name)
			}
			if !slices.Equal(names, tc.wantInputs) {
				t.Errorf("merged %v, want %v", names, tc.wantInputs)
			}
			tc.check(t, p)
		})
	}
}

// TestCompareRendered: each way MCO's rendered config can differ from the
// prediction, and what the diff says about it.
func TestCompareRendered(t *testing.T) {
	pool := poolSelecting("worker", "worker")
	base := []*mcfgv1.MachineConfig{testMC("00-worker", "worker", fileConfig("/etc/a", "a"), "quiet"), testMC("50-worker", "worker", fileConfig("/etc/b", "kiln"), "audit=1")}
	predict := func(t *testing.T, configs []*mcfgv1.MachineConfig) *Prediction {
		in, err := NewMCOInputs(pool, configs, sizeDefaults)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Predict(context.Background(), in, kilnImage)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		// mco turns the prediction into MCO's rendered config.
		mco        func(t *testing.T, p *Prediction) (*mcfgv1.MachineConfig, []*mcfgv1.MachineConfig)
		want       work.Difference
		specsEqual bool
		cause      string
		onlyMCO    []string
	}{{
		name: "kernel arguments sorted: the same arguments in another order",
		mco: func(t *testing.T, p *Prediction) (*mcfgv1.MachineConfig, []*mcfgv1.MachineConfig) {
			mc := p.Config.DeepCopy()
			slices.Sort(mc.Spec.KernelArguments)
			mc.Name, _ = RenderedName("worker", mc.Spec)
			return mc, p.Inputs
		},
		want:  work.Difference{Path: "spec.kernelArguments", Kind: "kernel argument order", Kiln: `["quiet","audit=1"]`, MCO: `["audit=1","quiet"]`, SetBy: "50-worker"},
		cause: "the rendered specs differ: first at spec.kernelArguments (kernel argument order)",
	}, {
		name: "a file's contents: path, both values decoded, the input that set it",
		mco: func(t *testing.T, p *Prediction) (*mcfgv1.MachineConfig, []*mcfgv1.MachineConfig) {
			other := predict(t, []*mcfgv1.MachineConfig{base[0], testMC("50-worker", "worker", fileConfig("/etc/b", "mco"), "audit=1")})
			return other.Config, p.Inputs
		},
		want:  work.Difference{Path: "spec.config.storage.files[/etc/b].contents.source", Kind: "file", Kiln: `"kiln" (data: URL, decoded)`, MCO: `"mco" (data: URL, decoded)`, SetBy: "50-worker"},
		cause: "kiln's value is set by MachineConfig 50-worker",
	}, {
		name: "a unit from an input only MCO merged",
		mco: func(t *testing.T, p *Prediction) (*mcfgv1.MachineConfig, []*mcfgv1.MachineConfig) {
			extra := testMC("60-late", "worker", `{"ignition":{"version":"3.5.0"},"systemd":{"units":[{"name":"late.service","enabled":true}]}}`)
			other := predict(t, append(slices.Clone(base), extra))
			return other.Config, other.Inputs
		},
		want:    work.Difference{Path: "spec.config.systemd.units[late.service]", Kind: "unit", Kiln: absent, MCO: `{"enabled":true,"name":"late.service"}`, SetByMCOOnly: []string{"60-late"}},
		cause:   "MCO also merged 60-late, which kiln did not",
		onlyMCO: []string{"60-late"},
	}, {
		name: "names differ, specs equal after normalisation: another Ignition version of the same config",
		mco: func(t *testing.T, p *Prediction) (*mcfgv1.MachineConfig, []*mcfgv1.MachineConfig) {
			mc := p.Config.DeepCopy()
			var cfg map[string]any
			if err := json.Unmarshal(mc.Spec.Config.Raw, &cfg); err != nil {
				t.Fatal(err)
			}
			cfg["ignition"].(map[string]any)["version"] = "3.4.0"
			mc.Spec.Config.Raw, _ = json.Marshal(cfg)
			mc.Name, _ = RenderedName("worker", mc.Spec)
			mc.Annotations = map[string]string{GeneratedByAnnotation: "4.21.0-mco"}
			return mc, p.Inputs
		},
		specsEqual: true,
		cause:      `the names differ but the specs are equal after normalisation: MCO hashed another encoding of the same config`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := predict(t, base)
			mco, inputs := tc.mco(t, p)
			if mco.Name == p.Config.Name {
				t.Fatal("the case does not change the name")
			}
			d, err := CompareRendered(p, mco, inputs)
			if err != nil {
				t.Fatal(err)
			}
			if d.SpecsEqual != tc.specsEqual || !strings.Contains(d.Cause, tc.cause) {
				t.Errorf("specsEqual %v, cause %q; want %v, %q", d.SpecsEqual, d.Cause, tc.specsEqual, tc.cause)
			}
			if !slices.Equal(d.OnlyMCO, tc.onlyMCO) {
				t.Errorf("only MCO merged %v, want %v", d.OnlyMCO, tc.onlyMCO)
			}
			if tc.specsEqual {
				if len(d.Differences) != 0 {
					t.Errorf("differences %+v", d.Differences)
				}
				if !strings.Contains(d.Cause, `kiln "version: 3.5.0", MCO "version: 3.4.0"`) {
					t.Errorf("cause does not name the hashed line: %s", d.Cause)
				}
				return
			}
			if len(d.Differences) == 0 {
				t.Fatalf("no differences, want first %+v\n%s", tc.want, d.Text())
			}
			if diff := cmp.Diff(tc.want, d.Differences[0]); diff != "" {
				t.Errorf("first difference (-want +got):\n%s\n%s", diff, d.Text())
			}
		})
	}
}
