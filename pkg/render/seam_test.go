package render

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/test/env"
)

// exportRenderInputs writes every object render reads from the apiserver
// into dir/cluster.yaml as the apiserver holds it (without managedFields,
// which no manifest carries), so a folder run reads the very same inputs,
// resourceVersions included.
func exportRenderInputs(t *testing.T, c client.Client, dir string) {
	t.Helper()
	var docs []string
	for _, l := range []struct{ apiVersion, kind string }{
		{"machineconfiguration.openshift.io/v1", "MachineConfigPoolList"},
		{"machineconfiguration.openshift.io/v1", "MachineConfigList"},
		{kmmv1beta1.GroupVersion.String(), "ModuleDay0List"},
		{"v1", "ConfigMapList"},
		{"config.openshift.io/v1", "ClusterVersionList"},
	} {
		ul := &unstructured.UnstructuredList{}
		ul.SetAPIVersion(l.apiVersion)
		ul.SetKind(l.kind)
		if err := c.List(context.Background(), ul); err != nil {
			t.Fatalf("listing %s: %v", l.kind, err)
		}
		for _, u := range ul.Items {
			if u.GetKind() == "ConfigMap" && u.GetNamespace() != "openshift-machine-config-operator" {
				continue // kube-root-ca.crt of every namespace
			}
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

// files maps every file under dir to its content.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		m[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// withoutManagedFields drops metadata.managedFields wherever a JSON
// document holds an object: the apiserver's own bookkeeping, which the
// exported folder, like any manifest, does not carry.
func withoutManagedFields(t *testing.T, text string) string {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	var strip func(v any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			delete(v, "managedFields")
			for _, e := range v {
				strip(e)
			}
		case []any:
			for _, e := range v {
				strip(e)
			}
		}
	}
	strip(doc)
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// clock is the time of day a progress line starts with.
var clock = regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d `)

// TestRenderFolderAndAPIServerAgree: `kiln-steps render` of a pool whose
// pools, MachineConfigs, payload ConfigMap, ClusterVersion and ModuleDay0
// are in test/env's apiserver, and of a folder exported from that
// apiserver, writes the same workspace files (rendered.json, inputs.json
// with the same resourceVersions, the ModuleDay0...), the same results and
// the same progress lines; and a pool missing from both fails with the
// same message.
func TestRenderFolderAndAPIServerAgree(t *testing.T) {
	e := env.Start(t, env.Options{Kube: true})
	c := e.Kube.Client
	seedCluster(t, c, "testdata/golden/custom-pool-over-worker", &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Spec: configv1.ClusterVersionSpec{ClusterID: "0b7a8e4c-8e9a-4d8e-9c1e-2f3a4b5c6d7e"}})
	src := t.TempDir()
	exportRenderInputs(t, c, src)

	type run struct {
		Code               int
		Out, Err           string
		Workspace, Results map[string]string
	}
	render := func(source, pool string) run {
		work, results := t.TempDir(), t.TempDir()
		code, out, errs := runStep(t, func(o *StepOptions) {
			o.Source, o.Kubeconfig, o.Pool, o.Work, o.ResultsDir = source, e.Kube.Kubeconfig(t), pool, work, results
		})
		ws := files(t, work)
		for name, text := range ws {
			if strings.HasSuffix(name, ".json") {
				ws[name] = withoutManagedFields(t, text)
			}
		}
		return run{Code: code, Out: clock.ReplaceAllString(out, ""), Err: errs, Workspace: ws, Results: files(t, results)}
	}
	for _, pool := range []string{"infra", "gone"} {
		onCluster, onFolder := render("cluster", pool), render("dir:"+src, pool)
		if pool == "infra" && (onCluster.Code != 0 || !strings.Contains(onCluster.Workspace["render/inputs.json"], `"kind": "ModuleDay0"`)) {
			t.Fatalf("render of infra on the apiserver: %+v", onCluster)
		}
		if pool == "gone" && !strings.Contains(onCluster.Err, `MachineConfigPool "gone" not found`) {
			t.Fatalf("render of a missing pool on the apiserver: %+v", onCluster)
		}
		if d := cmp.Diff(onCluster, onFolder); d != "" {
			t.Errorf("pool %s (-apiserver +folder):\n%s", pool, d)
		}
	}
}
