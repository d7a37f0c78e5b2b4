package bootimage

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/apis"
)

var seamScheme = func() *runtime.Scheme {
	s, err := apis.NewScheme()
	if err != nil {
		panic(err)
	}
	return s
}()

// exported lists, per apiVersion and list kind, the namespaces whose
// objects a boot image pass reads or writes ("" is cluster-scoped).
var exported = []struct {
	apiVersion, kind string
	namespaces       []string
}{
	{"config.openshift.io/v1", "InfrastructureList", []string{""}},
	{"config.openshift.io/v1", "ClusterVersionList", []string{""}},
	{"operator.openshift.io/v1", "MachineConfigurationList", []string{""}},
	{"v1", "ConfigMapList", []string{MCONamespace}},
	{"v1", "SecretList", []string{MachineAPINamespace}},
	{"machine.openshift.io/v1beta1", "MachineSetList", []string{MachineAPINamespace}},
	{"machineconfiguration.openshift.io/v1alpha1", "BootImageHistoryList", []string{MachineAPINamespace, CAPINamespace}},
	{CAPIGroup + "/v1beta2", "MachineSetList", []string{CAPINamespace}},
	{CAPIGroup + "/v1beta2", "MachineDeploymentList", []string{CAPINamespace}},
	{InfraGroup + "/v1beta1", "GCPMachineTemplateList", []string{CAPINamespace}},
}

// export reads every object of exported from the apiserver, keyed
// "Kind namespace/name", without managedFields (which no manifest holds).
func export(t *testing.T, c client.Client) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, e := range exported {
		for _, ns := range e.namespaces {
			l := &unstructured.UnstructuredList{}
			l.SetAPIVersion(e.apiVersion)
			l.SetKind(e.kind)
			if err := c.List(context.Background(), l, client.InNamespace(ns)); err != nil {
				t.Fatalf("listing %s: %v", e.kind, err)
			}
			for i := range l.Items {
				u := &l.Items[i]
				u.SetManagedFields(nil)
				out[u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName()] = u
			}
		}
	}
	return out
}

// withoutServerState drops what only a server keeps (versions, counters,
// identities and timestamps it assigns) and the wall clock's transition
// times, and serialises a kind of kiln's
// scheme through its Go type, as a folder write does, so that both sides
// read as the same JSON.
func withoutServerState(t *testing.T, u *unstructured.Unstructured) map[string]any {
	t.Helper()
	u = u.DeepCopy()
	for _, f := range []string{"resourceVersion", "generation", "managedFields", "creationTimestamp", "uid"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	// The status conditions' transition time is the wall clock's
	// (meta.SetStatusCondition), not the reconciler's Now.
	if conds, ok, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); ok {
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok {
				delete(m, "lastTransitionTime")
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
	}
	var o any = u.Object
	if typed, err := seamScheme.New(u.GroupVersionKind()); err == nil {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		o = typed
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// clusterChanges are the objects a pass changed on the apiserver, keyed
// as export keys them; a deleted one is "deleted <key>" and its stub.
func clusterChanges(t *testing.T, before, after map[string]*unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	for k, u := range after {
		if b, ok := before[k]; !ok || b.GetResourceVersion() != u.GetResourceVersion() {
			out[k] = withoutServerState(t, u)
		}
	}
	for k, b := range before {
		if _, ok := after[k]; !ok {
			stub := &unstructured.Unstructured{}
			stub.SetAPIVersion(b.GetAPIVersion())
			stub.SetKind(b.GetKind())
			stub.SetNamespace(b.GetNamespace())
			stub.SetName(b.GetName())
			out["deleted "+k] = withoutServerState(t, stub)
		}
	}
	return out
}

// folderChanges reads the output folder of a folder pass, keyed as
// clusterChanges keys the apiserver's.
func folderChanges(t *testing.T, out string) map[string]map[string]any {
	t.Helper()
	got := map[string]map[string]any{}
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			return err
		}
		key := u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
		if filepath.Base(filepath.Dir(p)) == "deleted" {
			key = "deleted " + key
		}
		got[key] = withoutServerState(t, u)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestFolderAndAPIServerAgree: one boot image pass over test/env's
// apiserver and one over a folder exported from it before the pass make
// the same report, log lines and error, and change the same objects in
// the same way: each object the apiserver holds changed is in the output
// folder with the same content (server state aside), each deleted one is
// a deletion stub, and nothing else is written. The inputs cover a stale,
// a current and a broken (missing Secret) Machine API MachineSet, a legacy
// stub Secret, a stale and a broken (missing template) Cluster API
// MachineSet, the status write and the histories.
func TestFolderAndAPIServerAgree(t *testing.T) {
	tc := startCluster(t, configv1.GCPPlatformType)
	ctx := context.Background()
	on := map[string]string{optInLabel: "on"}
	tc.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: CAPINamespace}})
	tc.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "worker-user-data", Namespace: MachineAPINamespace},
		Data: map[string][]byte{UserDataKey: []byte(stubV22)}})
	noSecret := gcpSpec(oldGCP)
	noSecret.UserDataSecret.Name = "gone-user-data"
	for _, ms := range []any{gcpMachineSet(t, "stale", oldGCP), gcpMachineSet(t, "current", newGCP), machineSet(t, "no-secret", noSecret)} {
		o := ms.(client.Object)
		o.SetLabels(on)
		tc.create(t, o)
	}
	tm := template(t, gcpTemplateYAML, oldGCP)
	tm.SetName("t-stale")
	tc.create(t, tm)
	tc.create(t, capiObject("MachineSet", "capi-stale", "GCPMachineTemplate", "t-stale", on))
	tc.create(t, capiObject("MachineSet", "capi-missing", "GCPMachineTemplate", "t-gone", on))
	tc.setOptIn(t, mapi(operatorv1.Partial, &metav1.LabelSelector{MatchLabels: on}))

	before := export(t, tc.kube.Client)
	src, out := t.TempDir(), t.TempDir()
	var objs []any
	for _, u := range before {
		objs = append(objs, u.Object)
	}
	writeManifests(t, src, objs...)
	folder, err := LoadDir(src, out)
	if err != nil {
		t.Fatalf("loading the exported folder: %v", err)
	}

	type pass struct {
		Log, Err string
		Report   *Report
	}
	run := func(c Cluster) pass {
		r := tc.reconciler(MachineAPINamespace)
		r.Cluster = c
		r.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
		r.CAPI = CAPIOptIn{Mode: CAPIPartial, Namespace: CAPINamespace, Selector: labels.SelectorFromSet(on)}
		var log strings.Builder
		r.Log = &log
		rep, err := r.Run(ctx)
		p := pass{Log: log.String(), Report: rep}
		if err != nil {
			p.Err = err.Error()
		}
		return p
	}
	onCluster := run(Kube{Client: tc.kube.Client})
	onFolder := run(folder)
	if !strings.Contains(onCluster.Err, "Secret "+MachineAPINamespace+"/gone-user-data: not found") ||
		!strings.Contains(onCluster.Err, "GCPMachineTemplate "+CAPINamespace+"/t-gone: not found") ||
		len(onCluster.Report.Patched) != 1 || onCluster.Report.CAPI == nil || len(onCluster.Report.CAPI.Patched) != 1 {
		t.Fatalf("the pass on the apiserver did not cover the inputs: %+v", onCluster)
	}
	if d := cmp.Diff(onCluster, onFolder); d != "" {
		t.Errorf("pass (-apiserver +folder):\n%s", d)
	}
	changed := clusterChanges(t, before, export(t, tc.kube.Client))
	if d := cmp.Diff(changed, folderChanges(t, out)); d != "" {
		t.Errorf("changed objects (-apiserver +folder):\n%s", d)
	}
	if len(changed) < 6 {
		t.Errorf("only %d objects changed on the apiserver: %v", len(changed), changed)
	}
}
