package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/pkg/mcrender"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
)

// TestRenderFromCluster creates a case's pools, MCs and payload ConfigMap
// (plus a ModuleDay0) in test/env's real apiserver, runs `kiln-steps
// render --source cluster --kubeconfig …`, and requires the rendered name
// the same manifests give from a directory.
func TestRenderFromCluster(t *testing.T) {
	e := env.Start(t, env.Options{Kube: true})
	c := e.Kube.Client
	const src = "testdata/golden/custom-pool-over-worker"
	seedCluster(t, c, src)

	work, results := t.TempDir(), t.TempDir()
	code, out, errs := runStep(t, func(o *StepOptions) {
		o.Source, o.Kubeconfig, o.Pool, o.Work, o.ResultsDir = "cluster", e.Kube.Kubeconfig(t), "infra", work, results
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	golden, _ := os.ReadFile(filepath.Join(src, "results.golden"))
	want := map[string]string{"HAS_KMOD": "true", "KMOD_BUILD": "true", "KMOD_SIGN": "false"}
	for _, line := range strings.Split(strings.TrimSpace(string(golden)), "\n") {
		if k, v, _ := strings.Cut(line, "="); strings.HasPrefix(k, "RENDERED_NAME") || k == "BASE_IMAGE" || k == "CONFIG_HASH" {
			want[k] = v
		}
	}
	for k, v := range want {
		got, err := os.ReadFile(filepath.Join(results, k))
		if err != nil || string(got) != v {
			t.Errorf("result %s = %q (%v), want %q", k, got, err, v)
		}
	}
	if !strings.Contains(out, "input 3: MachineConfig 50-infra-kubelet") {
		t.Errorf("progress:\n%s", out)
	}
	b, _ := os.ReadFile(filepath.Join(work, "render", "inputs.json"))
	if !strings.Contains(string(b), `"kind": "ModuleDay0"`) || strings.Contains(string(b), `"resourceVersion": ""`) {
		t.Errorf("inputs.json lacks the ModuleDay0 or the apiserver's resourceVersions:\n%s", b)
	}
	// The kmod stages read the pool's ModuleDay0 from the workspace.
	md, err := kmod.ReadModuleDay0(workspace.Workspace{Root: work})
	if err != nil || md.Spec.OSMapping.Build == nil {
		t.Errorf("render/moduleday0.json: %v %+v", err, md)
	}
}

func mustCreate(t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), o); err != nil {
		t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

// seedCluster creates the objects of the golden case src in c, with the
// namespaces they need and a ModuleDay0 that selects the infra pool (its
// Dockerfile ConfigMap "df" is in src), plus extra.
func seedCluster(t *testing.T, c client.Client, src string, extra ...client.Object) {
	t.Helper()
	objs, err := mcrender.LoadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"openshift-machine-config-operator", "openshift-kmm"} {
		mustCreate(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	var created []client.Object
	for _, o := range objs.Pools {
		created = append(created, o)
	}
	for _, o := range objs.Configs {
		created = append(created, o)
	}
	for _, o := range objs.ConfigMaps {
		created = append(created, o)
	}
	created = append(created, &kmmv1beta1.ModuleDay0{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "openshift-kmm"},
		Spec: kmmv1beta1.ModuleDay0Spec{
			MachineConfigPoolSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
			OSMapping: kmmv1beta1.OSMapping{ContainerImage: "registry.example.com/kmod/infra:1",
				Build: &kmmv1beta1.Build{DockerfileConfigMap: corev1.LocalObjectReference{Name: "df"}}},
		},
	})
	for _, o := range append(created, extra...) {
		o.SetResourceVersion("")
		mustCreate(t, c, o)
	}
}
