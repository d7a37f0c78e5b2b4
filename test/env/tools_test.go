package env_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/test/env"
)

// TestMissingToolNamesMakeTools: a test machine without the tools gets an
// error that says how to install them, never a silent skip.
func TestMissingToolNamesMakeTools(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	_, err := env.KubeAssets()
	var te *env.ToolError
	if !errors.As(err, &te) {
		t.Fatalf("KubeAssets with an empty assets folder: got %v, want a ToolError", err)
	}
	if !strings.Contains(err.Error(), "run `make tools`") || te.Tool != "kube-apiserver" {
		t.Errorf("error %q should name kube-apiserver and `make tools`", err)
	}
	if _, err := env.LookTool("kiln-no-such-tool"); err == nil || !strings.Contains(err.Error(), "make tools") {
		t.Errorf("LookTool of a missing command: got %v", err)
	}
}

func TestVersionsFile(t *testing.T) {
	v, err := env.Versions()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"K8S_VERSION", "CONTROLLER_GEN_VERSION"} {
		if !strings.HasPrefix(v[k], "v") {
			t.Errorf("hack/versions.sh: %s = %q, want a version", k, v[k])
		}
	}
}

func TestCRDsLoad(t *testing.T) {
	paths, err := env.CRDPaths()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := env.LoadCRDs(paths)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"machineconfigs.machineconfiguration.openshift.io":     false,
		"machineconfigpools.machineconfiguration.openshift.io": false,
		"machineconfignodes.machineconfiguration.openshift.io": false,
		"machinesets.machine.openshift.io":                     false,
		"machineconfigurations.operator.openshift.io":          false,
		"clusterversions.config.openshift.io":                  false,
		"infrastructures.config.openshift.io":                  false,
		"pipelineruns.tekton.dev":                              false,
		"moduleday0s.kmm.sigs.x-k8s.io":                        false,
		"machinesets.cluster.x-k8s.io":                         false,
		"machinedeployments.cluster.x-k8s.io":                  false,
		"gcpmachinetemplates.infrastructure.cluster.x-k8s.io":  false,
		"awsmachinetemplates.infrastructure.cluster.x-k8s.io":  false,
	}
	for _, c := range crds {
		if _, ok := want[c.Name]; ok {
			want[c.Name] = true
		}
	}
	for n, found := range want {
		if !found {
			t.Errorf("CRD %s not installed by the test environment", n)
		}
	}
}
