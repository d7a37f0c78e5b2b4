package kube

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var (
	widget = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	thing  = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}
	gadget = schema.GroupVersionKind{Group: "other.example.com", Version: "v1", Kind: "Gadget"}
)

// kindPath is a test layout: <Kind>/<namespace>_<name>, deletions under
// deleted/; Namespaces are never written.
func kindPath(gvk schema.GroupVersionKind, ns, name string, deleted bool) (string, string, error) {
	if gvk.Kind == "Namespace" {
		return "", "", fmt.Errorf("writing Namespace %s: not in this layout", name)
	}
	sub := gvk.Kind
	if deleted {
		sub = filepath.Join("deleted", gvk.Kind)
	}
	return sub, ns + "_" + name, nil
}

func openFolder(t *testing.T, dir string) (client.WithWatch, string) {
	t.Helper()
	out := t.TempDir()
	c, err := New(Source{Folder: &Folder{Dir: dir, Output: out, Path: kindPath,
		Groups: []string{widget.Group}, Kinds: []schema.GroupVersionKind{thing},
		StatusSubresource: []client.Object{&operatorv1.MachineConfiguration{}}}})
	if err != nil {
		t.Fatal(err)
	}
	return c, out
}

// tree maps each file under dir to its mode and content.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		m[filepath.ToSlash(rel)] = fmt.Sprintf("%v\n%s", fi.Mode().Perm(), b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFolderWritesEachChangeAsAManifest: a merge patch, an update, a
// create, a status patch and a delete on a folder client each leave one
// file, as testdata/folder/want holds it: the whole object as the client
// then holds it, with the manifest's own resourceVersion (none for a new
// object), a Secret readable by its owner only, a deletion as a stub; the
// source folder is unchanged.
func TestFolderWritesEachChangeAsAManifest(t *testing.T) {
	src := filepath.Join("testdata", "folder", "src")
	before := tree(t, src)
	c, out := openFolder(t, src)
	ctx := context.Background()

	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "cm-a"}, cm); err != nil {
		t.Fatal(err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"7"},"data":{"added":"1"}}`))
	if err := c.Patch(ctx, cm, patch); err != nil {
		t.Fatalf("patching ConfigMap a/cm-a: %v", err)
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "s"}, s); err != nil {
		t.Fatal(err)
	}
	s.Data["new"] = []byte("new")
	if err := c.Update(ctx, s); err != nil {
		t.Fatalf("updating Secret a/s: %v", err)
	}
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-b", Namespace: "b"}, Data: map[string]string{"k": "v"}}); err != nil {
		t.Fatalf("creating ConfigMap b/cm-b: %v", err)
	}
	mc := &operatorv1.MachineConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: "cluster"}, mc); err != nil {
		t.Fatal(err)
	}
	status := client.RawPatch(types.MergePatchType, []byte(`{"status":{"observedGeneration":3},"spec":{"logLevel":"Debug"}}`))
	if err := c.Status().Patch(ctx, mc, status); err != nil {
		t.Fatalf("patching MachineConfiguration status: %v", err)
	}
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widget)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "w"}, w); err != nil {
		t.Fatal(err)
	}
	uid := w.GetUID()
	if err := c.Delete(ctx, w, client.Preconditions{UID: &uid}); err != nil {
		t.Fatalf("deleting Widget a/w: %v", err)
	}

	got := tree(t, out)
	want := filepath.Join("testdata", "folder", "want")
	if *update {
		if err := os.RemoveAll(want); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(want, os.DirFS(out)); err != nil {
			t.Fatal(err)
		}
		return
	}
	wantTree := tree(t, want)
	// Modes are not kept by git beyond the executable bit: the golden
	// files carry the content, the modes are asserted here.
	for p := range wantTree {
		wantTree[p] = map[bool]string{true: "-rw-------", false: "-rw-r--r--"}[strings.HasPrefix(p, "Secret/")] + wantTree[p][strings.Index(wantTree[p], "\n"):]
	}
	if d := cmp.Diff(wantTree, got); d != "" {
		t.Errorf("output folder (-want +got):\n%s", d)
	}
	if d := cmp.Diff(before, tree(t, src)); d != "" {
		t.Errorf("source folder changed (-before +after):\n%s", d)
	}
}

// TestFolderReadsOnlyWhatAStageReads: kinds of Groups are served, a kind
// the stage lists but the folder lacks lists empty, and manifests of
// other unknown groups are not loaded.
func TestFolderReadsOnlyWhatAStageReads(t *testing.T) {
	c, _ := openFolder(t, filepath.Join("testdata", "folder", "src"))
	ctx := context.Background()
	names := func(gvk schema.GroupVersionKind) ([]string, error) {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if _, err := c.RESTMapper().RESTMapping(gvk.GroupKind()); err != nil {
			return nil, err
		}
		if err := c.List(ctx, l, client.InNamespace("a")); err != nil {
			return nil, err
		}
		out := []string{}
		for _, i := range l.Items {
			out = append(out, i.GetName())
		}
		return out, nil
	}
	for _, tc := range []struct {
		gvk     schema.GroupVersionKind
		want    []string
		wantErr bool
	}{
		{widget, []string{"w"}, false},
		{thing, []string{}, false},
		{gadget, nil, true},
	} {
		got, err := names(tc.gvk)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: error %v, want error %v", tc.gvk.Kind, err, tc.wantErr)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s names (-want +got):\n%s", tc.gvk.Kind, d)
		}
	}
	g := &unstructured.Unstructured{}
	g.SetGroupVersionKind(gadget)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "g"}, g); !apierrors.IsNotFound(err) {
		t.Errorf("reading Gadget a/g: %v, want not found", err)
	}
}

// TestFolderRefusesWritesItCannotRecord: a write the layout refuses, a
// DeleteAllOf and a server-side apply fail, change nothing in the client
// and write no file.
func TestFolderRefusesWritesItCannotRecord(t *testing.T) {
	c, out := openFolder(t, filepath.Join("testdata", "folder", "src"))
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	errs := map[string]error{
		"create":      c.Create(ctx, ns),
		"deleteAllOf": c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace("a")),
		"badName":     c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x/../../y", Namespace: "a"}}),
	}
	want := map[string]string{
		"create":      "writing Namespace a: not in this layout",
		"deleteAllOf": "deleting all *v1.ConfigMap: not supported on a folder of manifests",
		"badName":     "writing a_x/../../y",
	}
	for k, err := range errs {
		if err == nil || !strings.Contains(err.Error(), want[k]) {
			t.Errorf("%s: error %v, want one containing %q", k, err, want[k])
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "a"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("refused Namespace a: read back %v, want not found", err)
	}
	l := &corev1.ConfigMapList{}
	if err := c.List(ctx, l, client.InNamespace("a")); err != nil || len(l.Items) != 1 {
		t.Errorf("ConfigMaps in a after refused writes: %d (%v), want 1", len(l.Items), err)
	}
	if d := cmp.Diff(map[string]string{}, tree(t, out)); d != "" {
		t.Errorf("output folder (-want +got):\n%s", d)
	}
}

// TestFolderRefusesWhatTheLoaderRefuses: a manifest with a field its kind
// does not have is refused by pkg/manifests, naming the file and field.
func TestFolderRefusesWhatTheLoaderRefuses(t *testing.T) {
	dir := t.TempDir()
	bad := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: a}\ndatta: {k: v}\n"
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(Source{Folder: &Folder{Dir: dir, Output: t.TempDir(), Path: kindPath}})
	if err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), "datta") {
		t.Fatalf("error %v, want one naming bad.yaml and datta", err)
	}
}

// TestFolderShowsManifestResourceVersions: objects read from a folder
// carry their manifest's resourceVersion, none when it has none, in Get
// and List alike; such an object written back (update, or create as a
// save) replaces the folder's object, and once written it carries the
// client's version.
func TestFolderShowsManifestResourceVersions(t *testing.T) {
	c, out := openFolder(t, filepath.Join("testdata", "folder", "src"))
	ctx := context.Background()
	rv := func(key client.ObjectKey, o client.Object) string {
		t.Helper()
		if err := c.Get(ctx, key, o); err != nil {
			t.Fatal(err)
		}
		return o.GetResourceVersion()
	}
	secretKey := client.ObjectKey{Namespace: "a", Name: "s"}
	l := &corev1.SecretList{}
	if err := c.List(ctx, l, client.InNamespace("a")); err != nil || len(l.Items) != 1 {
		t.Fatalf("listing Secrets: %d (%v)", len(l.Items), err)
	}
	got := map[string]string{
		"ConfigMap a/cm-a": rv(client.ObjectKey{Namespace: "a", Name: "cm-a"}, &corev1.ConfigMap{}),
		"Secret a/s":       rv(secretKey, &corev1.Secret{}),
		"listed Secret":    l.Items[0].ResourceVersion,
	}
	if d := cmp.Diff(map[string]string{"ConfigMap a/cm-a": "7", "Secret a/s": "", "listed Secret": ""}, got); d != "" {
		t.Errorf("resourceVersions (-want +got):\n%s", d)
	}
	s := &corev1.Secret{}
	rv(secretKey, s)
	s.Data["saved"] = []byte("1")
	if err := c.Create(ctx, s); err != nil {
		t.Fatalf("saving Secret a/s read without a version: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(out, "Secret", "a_s.yaml"))
	if err != nil || !strings.Contains(string(b), "saved: MQ==") || strings.Contains(string(b), "resourceVersion") {
		t.Errorf("written Secret (%v):\n%s", err, b)
	}
	if v := rv(secretKey, &corev1.Secret{}); v == "" {
		t.Error("Secret a/s after a write: no resourceVersion, want the client's")
	}
}
