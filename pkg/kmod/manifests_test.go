package kmod

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/work"
)

// TestFolderReadsTheDockerfileConfigMap: kmod-build's Dockerfile
// ConfigMap is read from a manifest folder through the step's client,
// whatever file shape holds it (several documents among other kinds, a v1
// List), in the ModuleDay0's namespace only, a manifest without a
// namespace being in the namespace of the apply, not in every one; a
// folder the reader refuses fails with the file named.
func TestFolderReadsTheDockerfileConfigMap(t *testing.T) {
	const list = `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"dockerfile":"FROM b"}},{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}]}`
	cases := []struct {
		name, manifest string
		ns, cm         string // the ModuleDay0's namespace and dockerfileConfigMap
		want           string // the Dockerfile, or the error
	}{
		{name: "multi-document with other kinds", ns: "ns", cm: "a",
			manifest: "# comment only\n---\napiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata: {name: 99-x}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\ndata: {dockerfile: FROM x}\n",
			want:     "FROM x"},
		{name: "v1 List, both without a namespace", cm: "b", manifest: list, want: "FROM b"},
		{name: "namespace-less ConfigMap for a ModuleDay0 in a namespace", ns: "openshift-kmm", cm: "b", manifest: list,
			want: "ModuleDay0 openshift-kmm/m: spec.osMapping.build.dockerfileConfigMap: ConfigMap openshift-kmm/b not found"},
		{name: "ConfigMap in another namespace", ns: "openshift-kmm", cm: "a",
			manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: other}\ndata: {dockerfile: FROM x}\n",
			want:     "ModuleDay0 openshift-kmm/m: spec.osMapping.build.dockerfileConfigMap: ConfigMap openshift-kmm/a not found"},
		{name: "kind-less document", manifest: "metadata: {name: c}\n", want: "manifest.yaml: document 1: apiVersion and kind are required"},
		{name: "broken YAML", manifest: "apiVersion: v1\nkind: ConfigMap\ndata: [\n", want: "manifest.yaml: document 1: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(c.manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			md := &kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "m"}, Spec: kmmv1beta1.ModuleDay0Spec{
				OSMapping: kmmv1beta1.OSMapping{Build: &kmmv1beta1.Build{DockerfileConfigMap: corev1.LocalObjectReference{Name: c.cm}}}}}
			got, err := readDockerfile(t, dir, md)
			if err != nil {
				if !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %q, want one naming %q", err, c.want)
				}
				return
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("Dockerfile (-want +got):\n%s", d)
			}
		})
	}
}

// readDockerfile reads md's Dockerfile from the folder dir as kmod-build
// does; an error from loading the folder must name the folder.
func readDockerfile(t *testing.T, dir string, md *kmmv1beta1.ModuleDay0) (string, error) {
	t.Helper()
	c, err := newClient(&kube.KubeOptions{Source: "dir:" + dir}, work.Workspace{Root: t.TempDir()})
	if err != nil {
		if !strings.HasPrefix(err.Error(), "loading manifests from "+dir) {
			t.Errorf("error %q does not start with the folder", err)
		}
		return "", err
	}
	objs, err := objects(t.Context(), c, md)
	if err != nil {
		return "", err
	}
	return objs.dockerfile(md)
}

// TestOutputPath: the kmod stages write their ModuleDay0 to a folder as
// moduleday0s/<namespace>_<name>.yaml and refuse to write any other
// object or a deletion there.
func TestOutputPath(t *testing.T) {
	md := kmmv1beta1.GroupVersion.WithKind("ModuleDay0")
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	cases := []struct {
		name    string
		gvk     schema.GroupVersionKind
		deleted bool
		want    string // sub/base, or the error
	}{
		{name: "ModuleDay0", gvk: md, want: "moduleday0s/openshift-kmm_kiln-hello"},
		{name: "ModuleDay0 deletion", gvk: md, deleted: true, want: "writing ModuleDay0 openshift-kmm/kiln-hello: the kmod stages write no such object to a folder"},
		{name: "ConfigMap", gvk: cm, want: "writing ConfigMap openshift-kmm/kiln-hello: the kmod stages write no such object to a folder"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sub, base, err := outputPath(c.gvk, "openshift-kmm", "kiln-hello", c.deleted)
			got := sub + "/" + base
			if err != nil {
				got = err.Error()
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
