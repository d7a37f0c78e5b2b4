package rollout_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/cmd/cli"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/nodeimport"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/pkg/trust"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
	"github.com/kiln-dev/kiln/test/mcosim"
)

// exportPools writes every MachineConfigPool and MachineConfig of the
// apiserver into dir/cluster.yaml as the apiserver holds them (without
// managedFields, which no manifest carries): the folder a --source dir:
// run reads in place of the cluster.
func exportPools(t *testing.T, c client.Client, dir string) {
	t.Helper()
	var docs []string
	for _, kind := range []string{"MachineConfigPoolList", "MachineConfigList"} {
		ul := &unstructured.UnstructuredList{}
		ul.SetAPIVersion(mcfgv1.GroupVersion.String())
		ul.SetKind(kind)
		if err := c.List(context.Background(), ul); err != nil {
			t.Fatalf("listing %s: %v", kind, err)
		}
		for _, u := range ul.Items {
			u.SetManagedFields(nil)
			b, err := yaml.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(b))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stepRun is what one `kiln-steps rollout` did.
type stepRun struct {
	Code    int
	Out     string
	Results map[string]string
}

// progressClock is the time of day a progress line starts with.
var progressClock = regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d `)

// mcShape is what kiln's MachineConfig says: the part both sources hold
// alike (server state such as uid or generation aside).
type mcShape struct {
	Labels, Annotations map[string]string
	Spec                mcfgv1.MachineConfigSpec
}

func shapeOf(mc *mcfgv1.MachineConfig) *mcShape {
	if mc == nil {
		return nil
	}
	return &mcShape{Labels: mc.Labels, Annotations: mc.Annotations, Spec: mc.Spec}
}

// TestRolloutFolderAndAPIServerAgree: `kiln-steps rollout` of a signed
// image (test/env's registry, cosign, the node check's attestation) to a
// pool of test/env's apiserver, with mcosim as MCO, and to a folder
// exported from that apiserver before, writes the same kiln MachineConfig
// (labels, annotations, spec): for a pool without one, and for a pool
// whose kiln MachineConfig names an older image and carries a label and an
// annotation of its own, which both keep, with the older image as
// previous-image. The folder's new MachineConfig is the file folder mode
// always wrote (golden). An unsigned image, a pool neither source holds
// and a tag are refused with the same message and exit code in both
// modes, and nothing is written.
func TestRolloutFolderAndAPIServerAgree(t *testing.T) {
	e := env.Start(t, env.Options{Kube: true, Registry: true})
	h := &harness{t: t, kube: e.Kube, admin: e.Kube.Client}
	sim, err := mcosim.Start(context.Background(), mcosim.Options{Client: e.Kube.Client,
		Renderer: mcosim.KilnRenderer{Defaults: mcrender.Defaults{OSImageURL: payloadImage}}, StepDelay: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Stop)
	key := imagetest.NewCosignKey(t)
	signed := imagetest.PushRandomImage(t, e.Registry.Host, "kiln/agree:signed")
	unsigned := imagetest.PushRandomImage(t, e.Registry.Host, "kiln/agree:unsigned")
	inputs, err := trust.NodeImage{Pool: "agree", BaseImage: signed, RenderedName: "rendered-agree-1",
		RenderedHash: "sha256:" + strings.Repeat("b", 64), Source: "https://github.com/kiln-dev/kiln", Builder: "fast",
		NodeLint: nodeimport.RulesVersion}.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	key.Sign(t, registry.Remote{Insecure: []string{e.Registry.Host}}, signed, inputs)

	h.pool("agree", 1)
	h.pool("agreeprev", 1)
	prev := &mcfgv1.MachineConfig{}
	prev.Name = rollout.MachineConfigName("agreeprev")
	prev.Labels = map[string]string{rollout.RoleLabel: "agreeprev", rollout.ManagedLabel: "true", rollout.PoolLabel: "agreeprev", "team": "os"}
	prev.Annotations = map[string]string{rollout.RolloutImageAnnot: image(1), "note": "kept"}
	prev.Spec.OSImageURL = image(1)
	prev.Spec.Config = runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)}
	if err := h.admin.Create(context.Background(), prev); err != nil {
		t.Fatal(err)
	}
	h.waitPool("agreeprev", func(p *mcfgv1.MachineConfigPool) bool {
		rendered := &mcfgv1.MachineConfig{}
		return p.Status.Configuration.Name == p.Spec.Configuration.Name && p.Status.UpdatedMachineCount == 1 &&
			h.admin.Get(context.Background(), client.ObjectKey{Name: p.Spec.Configuration.Name}, rendered) == nil &&
			rendered.Spec.OSImageURL == image(1)
	})
	src := t.TempDir()
	exportPools(t, h.admin, src)
	inputsOf := map[string]*workspace.MCOInputs{"agree": h.mcoInputs("agree"), "agreeprev": h.mcoInputs("agreeprev")}

	// Every run has its work folder at the same path, so that messages
	// naming a file under it are the same.
	base := t.TempDir()
	work, results := filepath.Join(base, "work"), filepath.Join(base, "results")
	run := func(source, pool, img string) (stepRun, *mcfgv1.MachineConfig) {
		t.Helper()
		for _, d := range []string{work, results} {
			if err := os.RemoveAll(d); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		// What render saves for the drift gate, read before either run.
		if in := inputsOf[pool]; in != nil {
			writeJSONFile(t, workspace.Workspace{Root: work}.MCOInputsPath(), in)
		}
		var out bytes.Buffer
		code := cli.Execute(t.Context(), cli.NewSteps(), []string{"rollout", "--source", source, "--kubeconfig", e.Kube.Kubeconfig(t),
			"--pool", pool, "--image", img, "--public-key", key.PubPath, "--insecure-registry", e.Registry.Host,
			"--work", work, "--results-dir", results, "--timeout", "1m"}, &out, &out)
		r := stepRun{Code: code, Out: progressClock.ReplaceAllString(out.String(), ""), Results: map[string]string{}}
		for _, n := range []string{"ROLLOUT_STATE", "UPDATED_NODES", "DRIFT_GATE"} {
			b, _ := os.ReadFile(filepath.Join(results, n))
			r.Results[n] = string(b)
		}
		written, _ := filepath.Glob(filepath.Join(work, workspace.StageRollout, "*.yaml"))
		if source == "cluster" {
			if len(written) != 0 {
				t.Errorf("a cluster run wrote %v", written)
			}
			return r, h.kilnMC(pool)
		}
		switch {
		case len(written) == 0:
			return r, nil
		case len(written) > 1 || filepath.Base(written[0]) != rollout.MachineConfigName(pool)+".yaml":
			t.Fatalf("the folder run wrote %v", written)
		}
		b, err := os.ReadFile(written[0])
		if err != nil {
			t.Fatal(err)
		}
		mc := &mcfgv1.MachineConfig{}
		if err := yaml.UnmarshalStrict(b, mc); err != nil {
			t.Fatalf("%s: %v\n%s", written[0], err, b)
		}
		if pool == "agree" {
			assertGolden(t, "testdata/folder-new-machineconfig.yaml", strings.ReplaceAll(string(b), img, "IMAGE"))
		}
		return r, mc
	}

	tag := e.Registry.Host + "/kiln/agree:signed"
	for _, c := range []struct {
		name, pool, image string
		want              int
		phrase            string
	}{
		{"unsigned image", "agree", unsigned, exitcode.ExitRefused, "refusing to roll out " + unsigned + " to pool agree"},
		{"pool not found", "gone", signed, exitcode.ExitFailure, `reading MachineConfigPool gone: machineconfigpools.machineconfiguration.openshift.io "gone" not found`},
		{"tag instead of digest", "agree", tag, exitcode.ExitUsage, "a tag could move"},
	} {
		onCluster, clusterMC := run("cluster", c.pool, c.image)
		onFolder, folderMC := run("dir:"+src, c.pool, c.image)
		if onCluster.Code != c.want || !strings.Contains(onCluster.Out, c.phrase) || clusterMC != nil {
			t.Errorf("%s on the apiserver: exit %d, want %d with %q; kiln's MachineConfig %v\n%s", c.name, onCluster.Code, c.want, c.phrase, shapeOf(clusterMC), onCluster.Out)
		}
		if folderMC != nil {
			t.Errorf("%s on the folder: kiln's MachineConfig written: %+v", c.name, shapeOf(folderMC))
		}
		if d := cmp.Diff(onCluster, onFolder); d != "" {
			t.Errorf("%s (-apiserver +folder):\n%s", c.name, d)
		}
	}

	for pool, want := range map[string]*mcShape{
		"agree": {
			Labels:      map[string]string{rollout.RoleLabel: "agree", rollout.ManagedLabel: "true", rollout.PoolLabel: "agree"},
			Annotations: map[string]string{rollout.RolloutImageAnnot: signed},
		},
		"agreeprev": {
			Labels:      map[string]string{rollout.RoleLabel: "agreeprev", rollout.ManagedLabel: "true", rollout.PoolLabel: "agreeprev", "team": "os"},
			Annotations: map[string]string{rollout.RolloutImageAnnot: signed, rollout.PreviousImageAnnot: image(1), "note": "kept"},
		},
	} {
		onCluster, clusterMC := run("cluster", pool, signed)
		onFolder, folderMC := run("dir:"+src, pool, signed)
		if d := cmp.Diff(map[string]string{"ROLLOUT_STATE": rollout.StateSucceeded, "UPDATED_NODES": "1", "DRIFT_GATE": rollout.GatePassed}, onCluster.Results); d != "" {
			t.Errorf("pool %s on the apiserver, results (-want +got):\n%s\n%s", pool, d, onCluster.Out)
		}
		if d := cmp.Diff(map[string]string{"ROLLOUT_STATE": rollout.StateWritten, "UPDATED_NODES": "0", "DRIFT_GATE": rollout.GateOff}, onFolder.Results); d != "" {
			t.Errorf("pool %s on the folder, results (-want +got):\n%s\n%s", pool, d, onFolder.Out)
		}
		got := shapeOf(clusterMC)
		if got == nil {
			t.Fatalf("pool %s: no kiln MachineConfig on the apiserver\n%s", pool, onCluster.Out)
		}
		if d := cmp.Diff(want, &mcShape{Labels: got.Labels, Annotations: got.Annotations}); d != "" || got.Spec.OSImageURL != signed {
			t.Errorf("pool %s: kiln's MachineConfig on the apiserver (-want +got):\n%s\nosImageURL %s", pool, d, got.Spec.OSImageURL)
		}
		if d := cmp.Diff(got, shapeOf(folderMC)); d != "" {
			t.Errorf("pool %s: kiln's MachineConfig (-apiserver +folder):\n%s", pool, d)
		}
	}
}

// assertGolden compares got with the golden file at path.
func assertGolden(t *testing.T, path, got string) {
	t.Helper()
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s (-want +got):\n%s", path, d)
	}
}
