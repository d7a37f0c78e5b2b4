package bootimage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestLoadDirRefusesMachineSetNamedLikeAPath: the folder reader refuses a
// MachineSet whose name would climb out of the output folder, naming the
// object and the apiserver's rule, before anything is written.
func TestLoadDirRefusesMachineSetNamedLikeAPath(t *testing.T) {
	src, out := t.TempDir(), t.TempDir()
	writeManifests(t, src, gcpMachineSet(t, "../../x", "projects/p/global/images/a"))
	_, err := LoadDir(src, out)
	want := `MachineSet openshift-machine-api/../../x: metadata.name: Invalid value: "../../x": a lowercase RFC 1123 subdomain`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v\nwant it to contain %q", err, want)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("output folder has %d entries, want none", len(entries))
	}
}

// TestDirWritesStayInsideOutput: objects created with hostile names (as a
// future caller might hand them in, past the loader), and an output folder
// whose machinesets/ is a symlink to a folder outside, make every write
// fail; a walk of the whole temporary tree before and after shows nothing
// outside the output folder changed.
func TestDirWritesStayInsideOutput(t *testing.T) {
	top := t.TempDir()
	src, out, other := filepath.Join(top, "src"), filepath.Join(top, "out"), filepath.Join(top, "other")
	for _, d := range []string{src, out, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(other, "victim.yaml"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	inside := gcpMachineSet(t, "ok", "projects/p/global/images/a")
	writeManifests(t, src, inside)
	d, err := LoadDir(src, out)
	if err != nil {
		t.Fatal(err)
	}
	c := d.(Kube).Client
	hostile := gcpMachineSet(t, "../../x", "projects/p/global/images/a")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "../../../other/victim", Namespace: MachineAPINamespace}}
	capiMS := &unstructured.Unstructured{}
	capiMS.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	capiMS.SetKind("MachineSet")
	capiMS.SetNamespace("../..")
	capiMS.SetName("/x")
	before := outside(t, top, out)

	ctx := context.Background()
	if err := c.Create(ctx, hostile); err == nil {
		t.Error("writing a MachineSet named ../../x: accepted")
	}
	if err := c.Create(ctx, secret); err == nil {
		t.Error("writing a Secret named ../../../other/victim: accepted")
	}
	if err := c.Create(ctx, capiMS); err == nil {
		t.Error("writing a CAPI MachineSet named /x in namespace ../..: accepted")
	}
	if err := os.Symlink(other, filepath.Join(out, "machinesets")); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"labels":{"kiln.dev/touched":"true"}}}`)
	ms, err := d.MachineSet(ctx, MachineAPINamespace, "ok")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.PatchMachineSet(ctx, ms, patch); err == nil {
		t.Error("PatchMachineSet through a machinesets/ symlink to a folder outside: accepted")
	}
	if d := cmp.Diff(before, outside(t, top, out)); d != "" {
		t.Errorf("outside the output folder changed (-before +after):\n%s", d)
	}
}

// outside records every path under top but not under out, with its
// contents or link target.
func outside(t *testing.T, top, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(top, func(p string, e os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case p == out && e.IsDir():
			return filepath.SkipDir
		case e.Type()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			m[p] = "link:" + l
			return err
		case e.IsDir():
			m[p] = "dir"
		default:
			b, err := os.ReadFile(p)
			m[p] = "file:" + string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
