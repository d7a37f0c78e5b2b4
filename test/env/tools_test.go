package env_test

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

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

// The tools modules under hack/ build the versions hack/versions.sh names:
// test/env reads the versions file to find the binaries and their config.
func TestToolModulesMatchVersions(t *testing.T) {
	v, err := env.Versions()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct{ dir, module, key string }{
		{"tekton", "github.com/tektoncd/pipeline", "TEKTON_VERSION"},
		{"chains", "github.com/tektoncd/chains", "CHAINS_VERSION"},
		{"triggers", "github.com/tektoncd/triggers", "TRIGGERS_VERSION"},
	} {
		b, err := os.ReadFile(filepath.Join(env.RepoRoot(), "hack", m.dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.ParseLax("go.mod", b, nil)
		if err != nil {
			t.Fatalf("hack/%s/go.mod: %v", m.dir, err)
		}
		found := false
		for _, r := range f.Require {
			if r.Mod.Path == m.module {
				found = true
				if r.Mod.Version != v[m.key] {
					t.Errorf("hack/%s/go.mod requires %s %s; hack/versions.sh has %s=%s", m.dir, m.module, r.Mod.Version, m.key, v[m.key])
				}
			}
		}
		if !found {
			t.Errorf("hack/%s/go.mod does not require %s", m.dir, m.module)
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
		"pinnedimagesets.machineconfiguration.openshift.io":    false,
		"machinesets.machine.openshift.io":                     false,
		"machineconfigurations.operator.openshift.io":          false,
		"clusterversions.config.openshift.io":                  false,
		"infrastructures.config.openshift.io":                  false,
		"imagedigestmirrorsets.config.openshift.io":            false,
		"imagetagmirrorsets.config.openshift.io":               false,
		"images.config.openshift.io":                           false,
		"proxies.config.openshift.io":                          false,
		"imagecontentsourcepolicies.operator.openshift.io":     false,
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

// TestMissingDTKNamesMakeTools: without hack/dtk.sh's tarball, kmod tests
// are told to run `make tools`.
func TestMissingDTKNamesMakeTools(t *testing.T) {
	t.Setenv("KILN_CACHE", t.TempDir())
	_, _, err := env.DTKTarball()
	var te *env.ToolError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "run `make tools`") || !strings.Contains(te.Tool, "driver-toolkit") {
		t.Fatalf("DTKTarball with an empty cache: got %v, want a ToolError naming the driver toolkit and `make tools`", err)
	}
}

// TestDTKTarballLayout: the stand-in built by `make tools` holds gcc, make
// and the kernel headers tree a module compiles against; checked from the
// tarball's listing.
func TestDTKTarballLayout(t *testing.T) {
	path, kver, err := env.DTKTarball()
	if err != nil {
		t.Fatal(err)
	}
	names := dtkNames(t, path)
	for _, want := range []string{
		"usr/bin/make", "usr/bin/gcc", "usr/include/stdio.h",
		"usr/src/linux-headers-" + kver + "/Makefile",
		"usr/src/linux-headers-" + strings.TrimSuffix(kver, "-amd64") + "-common/Makefile",
		"usr/lib/linux-kbuild-6.1/scripts/mod/modpost",
		"usr/lib/modules/" + kver + "/build",
	} {
		if !names[want] {
			t.Errorf("DTK stand-in %s lacks %s", path, want)
		}
	}
}

func dtkNames(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		names[strings.TrimPrefix(h.Name, "./")] = true
	}
}
