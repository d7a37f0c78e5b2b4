package kmod

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLoadConfigMaps(t *testing.T) {
	cases := []struct {
		name, manifest string
		want           []string // namespace/name
		err            string
	}{
		{name: "multi-document with other kinds", manifest: "# comment only\n---\napiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata: {name: 99-x}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\ndata: {dockerfile: FROM x}\n",
			want: []string{"ns/a"}},
		{name: "v1 List", manifest: `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}},{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}]}`,
			want: []string{"/b"}},
		{name: "kind-less document", manifest: "metadata: {name: c}\n", err: "manifest.yaml: document 1: apiVersion and kind are required"},
		{name: "broken YAML", manifest: "apiVersion: v1\nkind: ConfigMap\ndata: [\n", err: "manifest.yaml: document 1: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(c.manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			cms, err := loadConfigMaps(dir)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "loading manifests from "+dir) {
					t.Fatalf("error %v, want one naming %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, cm := range cms {
				got = append(got, cm.Namespace+"/"+cm.Name)
			}
			if d := cmp.Diff(c.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
