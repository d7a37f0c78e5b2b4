package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// names lists what Walk handed over, as Kind/name (U: for unstructured).
func names(t *testing.T, dir string) ([]string, error) {
	t.Helper()
	var out []string
	err := Walk(dir, func(obj runtime.Object) error {
		switch o := obj.(type) {
		case *unstructured.Unstructured:
			out = append(out, "U:"+o.GetKind()+"/"+o.GetName())
		case *corev1.ConfigMap:
			out = append(out, "ConfigMap/"+o.Name)
		case *mcfgv1.MachineConfig:
			out = append(out, "MachineConfig/"+o.Name)
		default:
			out = append(out, "other")
		}
		return nil
	})
	return out, err
}

func TestWalk(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  []string
		err   string
	}{
		{name: "multi-document YAML, comments, non-manifest files", files: map[string]string{
			"a.yaml":    "# header\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n---\n---\napiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata: {name: 99-x}\n",
			"README.md": "not a manifest",
		}, want: []string{"ConfigMap/one", "MachineConfig/99-x"}},
		{name: "JSON v1 List", files: map[string]string{
			"l.json": `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}},{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}]}`,
		}, want: []string{"ConfigMap/a", "ConfigMap/b"}},
		{name: "unknown kind is unstructured", files: map[string]string{
			"capi.yml": "apiVersion: cluster.x-k8s.io/v1beta2\nkind: MachineSet\nmetadata: {name: ms}\n",
		}, want: []string{"U:MachineSet/ms"}},
		{name: "nested folders in name order", files: map[string]string{
			"b/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: second}\n",
			"a/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: first}\n",
		}, want: []string{"ConfigMap/first", "ConfigMap/second"}},
		{name: "kind-less document", files: map[string]string{"m.yaml": "metadata: {name: c}\n"}, err: "m.yaml: document 1: apiVersion and kind are required"},
		{name: "second document broken", files: map[string]string{"m.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\ndata: [\n"}, err: "m.yaml: document 2: "},
		{name: "bad list item", files: map[string]string{"l.json": `{"apiVersion":"v1","kind":"List","items":[{"metadata":{}}]}`}, err: "l.json: document 1: items[0]: apiVersion and kind are required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for f, content := range c.files {
				p := filepath.Join(dir, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := names(t, dir)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "loading manifests from "+dir+": ") {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// FuzzDecode feeds arbitrary bytes to the reader (YAML streams, JSON,
// Lists), seeded with render's golden and bad-input manifests: it must not
// panic, and reading the same bytes twice must give the same objects.
func FuzzDecode(f *testing.F) {
	for _, dir := range []string{"../render/testdata/golden", "../render/testdata/bad"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*", "*.*"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".json")) {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("---\n# c\n---\nkind: X\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		read := func() ([]runtime.Object, error) {
			var objs []runtime.Object
			err := Decode("fuzz.yaml", strings.NewReader(string(b)), func(o runtime.Object) error {
				objs = append(objs, o)
				return nil
			})
			return objs, err
		}
		first, err := read()
		if err != nil {
			return
		}
		again, err := read()
		if err != nil {
			t.Fatalf("second read failed: %v", err)
		}
		if d := cmp.Diff(first, again); d != "" {
			t.Fatalf("reading the same manifests twice gave different objects (-first +again):\n%s", d)
		}
	})
}
