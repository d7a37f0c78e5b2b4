package bootimage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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

// TestDirWritesStayInsideOutput: objects that bypass the loader with
// hostile names (as a future caller might hand them in), and an output
// folder whose machinesets/ is a symlink to a folder outside, make every
// write fail; a walk of the whole temporary tree before and after shows
// nothing outside the output folder changed.
func TestDirWritesStayInsideOutput(t *testing.T) {
	top := t.TempDir()
	out, other := filepath.Join(top, "out"), filepath.Join(top, "other")
	for _, d := range []string{out, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(other, "victim.yaml"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostile := gcpMachineSet(t, "../../x", "projects/p/global/images/a")
	inside := gcpMachineSet(t, "ok", "projects/p/global/images/a")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "../../../other/victim", Namespace: MachineAPINamespace}}
	capiMS := &unstructured.Unstructured{}
	capiMS.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	capiMS.SetKind("MachineSet")
	capiMS.SetNamespace("../..")
	capiMS.SetName("/x")
	d := &Dir{Output: out, objs: map[string]runtime.Object{}, capi: map[string]*unstructured.Unstructured{}}
	for _, ms := range []*machinev1beta1.MachineSet{hostile, inside} {
		d.objs["MachineSet/"+ms.Namespace+"/"+ms.Name] = ms
	}
	before := outside(t, top, out)

	ctx := context.Background()
	patch := []byte(`{"metadata":{"labels":{"kiln.dev/touched":"true"}}}`)
	if err := d.PatchMachineSet(ctx, hostile.DeepCopy(), patch); err == nil {
		t.Error("PatchMachineSet of a MachineSet named ../../x: accepted")
	}
	if err := d.UpdateSecret(ctx, secret); err == nil {
		t.Error("UpdateSecret of a Secret named ../../../other/victim: accepted")
	}
	if err := d.write("capi", "MachineSet_"+capiMS.GetNamespace()+"_"+capiMS.GetName(), capiMS.Object); err == nil {
		t.Error("writing a CAPI MachineSet named /x in namespace ../..: accepted")
	}
	if err := os.Symlink(other, filepath.Join(out, "machinesets")); err != nil {
		t.Fatal(err)
	}
	if err := d.PatchMachineSet(ctx, inside.DeepCopy(), patch); err == nil {
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
