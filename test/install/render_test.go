package install

import (
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kiln-dev/kiln/test/env"
)

// clusterScoped are the cluster-scoped kinds the install holds.
var clusterScoped = []string{"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}

// TestRenderInstall renders config/ as `kubectl kustomize config/` does
// and checks what the install promises: every namespaced object has a
// namespace (kiln unless it must live elsewhere), cluster-scoped ones have
// none, one ServiceAccount per Task named after it, every Task and
// Pipeline, and the trigger Deployment.
func TestRenderInstall(t *testing.T) {
	objs, err := Render(ConfigDir())
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string][]*unstructured.Unstructured{}
	for _, o := range objs {
		byKind[o.GetKind()] = append(byKind[o.GetKind()], o)
		ns := o.GetNamespace()
		switch {
		case slices.Contains(clusterScoped, o.GetKind()):
			if ns != "" {
				t.Errorf("cluster-scoped %s %s has namespace %q", o.GetKind(), o.GetName(), ns)
			}
		case ns == "":
			t.Errorf("%s %s has no namespace", o.GetKind(), o.GetName())
		case ns != installNS && o.GetKind() != "Role" && o.GetKind() != "RoleBinding":
			t.Errorf("%s %s is in namespace %q, want %s", o.GetKind(), o.GetName(), ns, installNS)
		}
		if o.GetLabels()["app.kubernetes.io/part-of"] != "kiln" {
			t.Errorf("%s %s lacks the label app.kubernetes.io/part-of=kiln", o.GetKind(), o.GetName())
		}
	}
	if n := len(byKind["Namespace"]); n != 1 || byKind["Namespace"][0].GetName() != installNS {
		t.Errorf("namespaces: %v", byKind["Namespace"])
	}

	// Every Task and Pipeline file is installed, and each Task kiln-X has
	// ServiceAccount kiln-X (the trigger's naming rule).
	for _, dir := range []string{"tasks", "pipelines"} {
		files := yamlFiles(t, filepath.Join(env.RepoRoot(), dir))
		kind := map[string]string{"tasks": "Task", "pipelines": "Pipeline"}[dir]
		if len(byKind[kind]) != len(files) {
			t.Errorf("%s/ has %d files, the install %d %ss: update %s/kustomization.yaml", dir, len(files), len(byKind[kind]), kind, dir)
		}
	}
	sas := map[string]bool{}
	for _, sa := range byKind["ServiceAccount"] {
		sas[sa.GetName()] = true
	}
	for _, task := range byKind["Task"] {
		if !sas[task.GetName()] {
			t.Errorf("Task %s has no ServiceAccount %s", task.GetName(), task.GetName())
		}
		delete(sas, task.GetName())
	}
	if len(sas) != 1 || !sas["kiln-trigger"] {
		t.Errorf("ServiceAccounts besides the Tasks': %v, want only kiln-trigger", sas)
	}
	crds := yamlFiles(t, filepath.Join(ConfigDir(), "crd"))
	if len(byKind["CustomResourceDefinition"]) != len(crds) {
		t.Errorf("config/crd has %d CRDs, the install %d: update config/crd/kustomization.yaml", len(crds), len(byKind["CustomResourceDefinition"]))
	}

	deps := byKind["Deployment"]
	if len(deps) != 1 {
		t.Fatalf("Deployments: %d, want the trigger's", len(deps))
	}
	c, _, _ := unstructured.NestedSlice(deps[0].Object, "spec", "template", "spec", "containers")
	sa, _, _ := unstructured.NestedString(deps[0].Object, "spec", "template", "spec", "serviceAccountName")
	if len(c) != 1 || sa != "kiln-trigger" {
		t.Fatalf("trigger Deployment: %d containers, serviceAccountName %q", len(c), sa)
	}
	ctr := c[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(ctr, "args")
	for _, want := range []string{"--source=cluster", "--namespace=kiln", "--leader-elect", "--health-probe-bind-address=:8081"} {
		if !slices.Contains(args, want) {
			t.Errorf("trigger args %v lack %s", args, want)
		}
	}
	if ctr["image"] != "ghcr.io/kiln-dev/kiln-trigger:v0.1.0" {
		t.Errorf("trigger image %v", ctr["image"])
	}
	var rules []string
	for _, r := range byKind["PrometheusRule"] {
		rules = append(rules, r.GetName())
	}
	if !slices.Equal(rules, []string{"kiln-trigger", "kiln-bootimages"}) {
		t.Errorf("PrometheusRules %v", rules)
	}
}

// TestRenderCAPI: the optional Cluster API Role renders on its own and
// grants kiln-bootimages only in openshift-cluster-api.
func TestRenderCAPI(t *testing.T) {
	objs, err := Render(filepath.Join(ConfigDir(), "capi"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Grants(objs, installNS, "kiln-bootimages")
	if err != nil {
		t.Fatal(err)
	}
	if len(g) == 0 {
		t.Fatal("config/capi grants kiln-bootimages nothing")
	}
	for _, x := range g {
		if x.Namespace != "openshift-cluster-api" {
			t.Errorf("config/capi grant outside openshift-cluster-api: %s", x.Key())
		}
	}
}

// TestUnused holds the checker itself to its rules: a refused request uses
// nothing, resourceNames and namespaces restrict, the allow-list exempts.
func TestUnused(t *testing.T) {
	objs, err := Render(ConfigDir())
	if err != nil {
		t.Fatal(err)
	}
	g, err := Grants(objs, installNS, "kiln-render")
	if err != nil {
		t.Fatal(err)
	}
	cv := Request{Verb: "get", APIGroup: "config.openshift.io", Resource: "clusterversions", Name: "version", Status: 200}
	cm := Request{Verb: "get", Resource: "configmaps", Namespace: "openshift-machine-config-operator", Name: "machine-config-osimageurl", Status: 200}
	cases := []struct {
		name  string
		reqs  []Request
		allow map[string]string
		want  int
	}{
		{"nothing used", nil, nil, 5},
		{"two used", []Request{cv, cm}, nil, 3},
		{"refused uses nothing", []Request{func() Request { r := cv; r.Status = 403; return r }()}, nil, 5},
		{"other name", []Request{func() Request { r := cv; r.Name = "other"; return r }()}, nil, 5},
		{"other namespace", []Request{func() Request { r := cm; r.Namespace = "kiln"; return r }()}, nil, 5},
		{"allow-listed", []Request{cv, cm}, map[string]string{"list machineconfigs.machineconfiguration.openshift.io ns=": "test"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Unused(g, c.reqs, c.allow); len(got) != c.want {
				t.Errorf("%d unused, want %d:\n%s", len(got), c.want, Describe(got))
			}
		})
	}
}

// yamlFiles lists dir's YAML files but its kustomization.yaml.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range all {
		if filepath.Base(p) != "kustomization.yaml" {
			out = append(out, p)
		}
	}
	return out
}
