package bootimage

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcfgv1alpha1 "github.com/kiln-dev/kiln/pkg/apis/machineconfiguration/v1alpha1"
)

const capiCluster = "ci-7xk2p"

// capiObject builds a CAPI v1beta2 MachineSet or MachineDeployment whose
// infrastructureRef names a template.
func capiObject(kind, name, tmplKind, tmplName string, lbls map[string]string) *unstructured.Unstructured {
	sel := map[string]any{"cluster.x-k8s.io/set-name": name}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"clusterName": capiCluster,
			"replicas":    int64(1),
			"selector":    map[string]any{"matchLabels": sel},
			"template": map[string]any{
				"metadata": map[string]any{"labels": sel},
				"spec": map[string]any{
					"clusterName":       capiCluster,
					"bootstrap":         map[string]any{"dataSecretName": "worker-user-data"},
					"infrastructureRef": map[string]any{"apiGroup": InfraGroup, "kind": tmplKind, "name": tmplName},
				},
			},
		},
	}}
	u.SetAPIVersion(CAPIGroup + "/v1beta2")
	u.SetKind(kind)
	u.SetNamespace(CAPINamespace)
	u.SetName(name)
	u.SetLabels(lbls)
	return u
}

type capiSet struct {
	name, tmpl, kind string
	enrolled         bool
	mutate           func(*unstructured.Unstructured)
}

func TestClusterAPIOnAPIServer(t *testing.T) {
	tc := startCluster(t, configv1.GCPPlatformType)
	ctx := context.Background()
	tc.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: CAPINamespace}})
	for name, image := range map[string]string{"t-stale": oldGCP, "t-shared": oldGCP, "t-current": newGCP, "t-owned": oldGCP, "t-partly": oldGCP, "t-arm": oldGCP} {
		tm := template(t, gcpTemplateYAML, image)
		tm.SetName(name)
		tc.create(t, tm)
	}
	md := capiObject("MachineDeployment", "md", "GCPMachineTemplate", "t-owned", nil)
	tc.create(t, md)
	sets := []capiSet{
		{name: "stale", tmpl: "t-stale", enrolled: true},
		{name: "shared-1", tmpl: "t-shared", enrolled: true},
		{name: "shared-2", tmpl: "t-shared", enrolled: true},
		{name: "current", tmpl: "t-current", enrolled: true},
		{name: "owned", tmpl: "t-owned", enrolled: true, mutate: func(u *unstructured.Unstructured) {
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: CAPIGroup + "/v1beta2", Kind: "MachineDeployment", Name: "md", UID: md.GetUID()}})
		}},
		{name: "partly", tmpl: "t-partly", enrolled: true},
		{name: "opted-out", tmpl: "t-partly"},
		{name: "arm64", tmpl: "t-arm", enrolled: true, mutate: func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{ArchAnnotation: "kubernetes.io/arch=arm64"})
		}},
		// Bad input: a template that does not exist, a kind kiln cannot edit.
		{name: "missing", tmpl: "t-gone", enrolled: true},
		{name: "azure", tmpl: "t-azure", kind: "AzureMachineTemplate", enrolled: true},
	}
	for _, s := range sets {
		kind := s.kind
		if kind == "" {
			kind = "GCPMachineTemplate"
		}
		lbls := map[string]string{}
		if s.enrolled {
			lbls[optInLabel] = "on"
		}
		u := capiObject("MachineSet", s.name, kind, s.tmpl, lbls)
		if s.mutate != nil {
			s.mutate(u)
		}
		tc.create(t, u)
	}
	before := map[string]*unstructured.Unstructured{}
	items := listCAPI(t, tc, "MachineSetList")
	for i := range items {
		before[items[i].GetName()] = &items[i]
	}

	tc.counter.reset()
	r := tc.reconciler(MachineAPINamespace)
	r.CAPI = CAPIOptIn{Mode: CAPIPartial, Selector: labels.SelectorFromSet(labels.Set{optInLabel: "on"})}
	var log strings.Builder
	r.Log = &log
	rep, err := r.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "2 of 9 Cluster API MachineSets failed") {
		t.Fatalf("run: %v, want 2 of 9 failed\n%s", err, log.String())
	}
	c := rep.CAPI
	if c == nil || c.Enrolled != 9 {
		t.Fatalf("CAPI report %+v", c)
	}
	var patched []string
	clones := map[string]string{}
	for _, o := range c.Patched {
		patched = append(patched, o.Name)
		clones[o.Name] = o.Template
	}
	if d := cmp.Diff([]string{"arm64", "partly", "shared-1", "shared-2", "stale"}, patched); d != "" {
		t.Errorf("patched (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"current"}, c.UpToDate); d != "" {
		t.Errorf("up to date (-want +got):\n%s", d)
	}
	if len(c.Skipped) != 1 || c.Skipped[0].Name != "owned" || !strings.Contains(c.Skipped[0].Reason, ReasonOwned) {
		t.Errorf("skipped %+v, want only owned (%s)", c.Skipped, ReasonOwned)
	}
	errs := map[string]string{}
	for _, e := range c.Errors {
		errs[e.Name] = e.Reason
	}
	if !strings.Contains(errs["missing"], "MachineSet openshift-cluster-api/missing spec.template.spec.infrastructureRef: GCPMachineTemplate openshift-cluster-api/t-gone: not found") ||
		!strings.Contains(errs["azure"], "MachineSet openshift-cluster-api/azure spec.template.spec.infrastructureRef: AzureMachineTemplate.infrastructure.cluster.x-k8s.io is not a supported infrastructure template") || len(errs) != 2 {
		t.Errorf("errors %v", errs)
	}
	if clones["shared-1"] != clones["shared-2"] || clones["stale"] == clones["partly"] {
		t.Errorf("clones %v: MachineSets sharing a template must share its clone, others not", clones)
	}
	// API writes: one clone per distinct template, one patch per stale
	// MachineSet, one delete per template nothing refers to any more.
	for key, want := range map[string]int{"POST gcpmachinetemplates": 4, "PATCH machinesets": 5, "DELETE gcpmachinetemplates": 3} {
		if got := tc.counter.get(key); got != want {
			t.Errorf("%s: %d requests, want %d", key, got, want)
		}
	}
	if tc.counter.get("PATCH machinedeployments")+tc.counter.get("POST machinesets")+tc.counter.get("PUT machinesets") != 0 {
		t.Errorf("unexpected writes: %v", tc.counter.writes)
	}
	sort.Strings(c.TemplatesDeleted)
	want := []string{"GCPMachineTemplate openshift-cluster-api/t-arm", "GCPMachineTemplate openshift-cluster-api/t-shared", "GCPMachineTemplate openshift-cluster-api/t-stale"}
	if d := cmp.Diff(want, c.TemplatesDeleted); d != "" {
		t.Errorf("deleted (-want +got):\n%s", d)
	}

	templates := map[string]*unstructured.Unstructured{}
	for _, u := range listCAPITemplates(t, tc) {
		templates[u.GetName()] = u
	}
	for _, gone := range []string{"t-stale", "t-shared", "t-arm"} {
		if templates[gone] != nil {
			t.Errorf("template %s still exists", gone)
		}
	}
	for _, kept := range []string{"t-partly", "t-owned", "t-current"} {
		if templates[kept] == nil {
			t.Errorf("template %s was deleted; something still refers to it", kept)
		}
	}
	oldSpec := template(t, gcpTemplateYAML, oldGCP).Object["spec"]
	for _, u := range listCAPI(t, tc, "MachineSetList") {
		old := before[u.GetName()]
		clone, ok := clones[u.GetName()]
		if !ok {
			if u.GetResourceVersion() != old.GetResourceVersion() {
				t.Errorf("MachineSet %s written (resourceVersion %s → %s)", u.GetName(), old.GetResourceVersion(), u.GetResourceVersion())
			}
			continue
		}
		if d := cmp.Diff(map[string]any{".template.spec.infrastructureRef.name": clone}, changedPaths(old.Object["spec"], u.Object["spec"])); d != "" {
			t.Errorf("MachineSet %s: spec changes, want only infrastructureRef.name (-want +got):\n%s", u.GetName(), d)
		}
		if d := cmp.Diff(old.GetLabels(), u.GetLabels()); d != "" {
			t.Errorf("MachineSet %s: labels changed (-before +after):\n%s", u.GetName(), d)
		}
		if u.GetAnnotations()[HotLoopAnnotation] == "" {
			t.Errorf("MachineSet %s: no %s annotation in %v", u.GetName(), HotLoopAnnotation, u.GetAnnotations())
		}
		want := newGCP
		if u.GetName() == "arm64" {
			want = "projects/rhcos-cloud/global/images/rhcos-9-6-20261001-0-gcp-aarch64"
		}
		ct := templates[clone]
		if ct == nil {
			t.Errorf("clone %s of %s missing", clone, u.GetName())
			continue
		}
		if d := cmp.Diff(map[string]any{".template.spec.image": want}, changedPaths(oldSpec, ct.Object["spec"])); d != "" {
			t.Errorf("clone %s: spec changes, want only image (-want +got):\n%s", clone, d)
		}
		if len(ct.GetOwnerReferences()) != 1 || ct.GetOwnerReferences()[0].Kind != "Cluster" {
			t.Errorf("clone %s lost its owner: %v", clone, ct.GetOwnerReferences())
		}
		h := &mcfgv1alpha1.BootImageHistory{}
		if err := tc.kube.Client.Get(ctx, client.ObjectKey{Namespace: CAPINamespace, Name: u.GetName() + "-capi-machineset"}, h); err != nil {
			t.Errorf("%s: history: %v", u.GetName(), err)
		} else if d := h.Status.Details; len(d) != 1 || d[0].BootImage != want || d[0].BootImageVersion != "9.6.20261001-0" ||
			h.Spec.MachineResourceReference != (mcfgv1alpha1.MachineResourceReference{Name: u.GetName(), Resource: "MachineSet", APIGroup: CAPIGroup}) {
			t.Errorf("%s: history %+v", u.GetName(), h)
		}
	}
	mc := tc.machineConfiguration(t)
	if d := condition(mc, ConditionDegraded); d == nil || d.Status != metav1.ConditionTrue || !strings.Contains(d.Message, "| 2 Degraded CAPI MachineSets | Error(s): [error syncing CAPI MachineSet ") {
		t.Errorf("degraded %+v", d)
	}
	if p := condition(mc, ConditionProgressing); p == nil || !strings.Contains(p.Message, "Reconciled 7 of 9 CAPI MachineSets (5 patched, 1 up to date, 1 skipped)") {
		t.Errorf("progressing %+v", p)
	}

	// A second pass writes nothing to Cluster API objects and creates nothing.
	tc.counter.reset()
	rep, _ = r.Run(ctx)
	for _, k := range []string{"POST gcpmachinetemplates", "PATCH machinesets", "DELETE gcpmachinetemplates"} {
		if n := tc.counter.get(k); n != 0 {
			t.Errorf("second pass: %s %d", k, n)
		}
	}
	if len(rep.CAPI.Patched) != 0 || len(rep.CAPI.UpToDate) != 6 || len(rep.CAPI.TemplatesCreated) != 0 {
		t.Errorf("second pass: %+v", rep.CAPI)
	}

	// An interrupted pass (patched, old template not yet deleted) is
	// finished by the next one: recreate t-stale as if it had survived.
	tm := template(t, gcpTemplateYAML, oldGCP)
	tm.SetName("t-stale")
	tc.create(t, tm)
	tc.counter.reset()
	rep, _ = r.Run(ctx)
	if d := cmp.Diff([]string{"GCPMachineTemplate openshift-cluster-api/t-stale"}, rep.CAPI.TemplatesDeleted); d != "" {
		t.Errorf("leftover template: deleted (-want +got):\n%s", d)
	}
	if n := tc.counter.get("DELETE gcpmachinetemplates"); n != 1 {
		t.Errorf("leftover template: %d DELETE requests, want 1", n)
	}
}

func listCAPI(t testing.TB, tc *testCluster, kind string) []unstructured.Unstructured {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion(CAPIGroup + "/v1beta2")
	l.SetKind(kind)
	if err := tc.kube.Client.List(context.Background(), l, client.InNamespace(CAPINamespace)); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func listCAPITemplates(t testing.TB, tc *testCluster) []*unstructured.Unstructured {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion(InfraGroup + "/v1beta1")
	l.SetKind("GCPMachineTemplateList")
	if err := tc.kube.Client.List(context.Background(), l, client.InNamespace(CAPINamespace)); err != nil {
		t.Fatal(err)
	}
	out := make([]*unstructured.Unstructured, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out
}

// TestClusterAPIAWSHotLoop: on AWS the clone of an AWSMachineTemplate passes
// CAPA's CRD validation, and a MachineSet whose reference keeps being
// reverted is patched HotLoopLimit times, then refused with an error.
func TestClusterAPIAWSHotLoop(t *testing.T) {
	tc := startCluster(t, configv1.AWSPlatformType)
	ctx := context.Background()
	inf := &configv1.Infrastructure{}
	if err := tc.kube.Client.Get(ctx, client.ObjectKey{Name: "cluster"}, inf); err != nil {
		t.Fatal(err)
	}
	inf.Status.PlatformStatus.AWS = &configv1.AWSPlatformStatus{Region: "eu-west-1"}
	if err := tc.kube.Client.Status().Update(ctx, inf); err != nil {
		t.Fatal(err)
	}
	tc.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: CAPINamespace}})
	old := template(t, awsTemplateYAML, "ami-0123456789abcdef0")
	ms := capiObject("MachineSet", "worker-eu-west-1a", "AWSMachineTemplate", old.GetName(), nil)
	tc.create(t, ms)
	r := tc.reconciler(MachineAPINamespace)
	r.CAPI = CAPIOptIn{Mode: CAPIAll}
	for i := 1; i <= HotLoopLimit+1; i++ {
		// Something (say, a GitOps sync) puts the old template back and
		// points the MachineSet at it again.
		tc.create(t, template(t, awsTemplateYAML, "ami-0123456789abcdef0"))
		cur := listCAPI(t, tc, "MachineSetList")[0]
		if err := unstructured.SetNestedField(cur.Object, old.GetName(), "spec", "template", "spec", "infrastructureRef", "name"); err != nil {
			t.Fatal(err)
		}
		if err := tc.kube.Client.Update(ctx, &cur); err != nil {
			t.Fatal(err)
		}
		tc.counter.reset()
		rep, err := r.Run(ctx)
		if i <= HotLoopLimit {
			if err != nil || len(rep.CAPI.Patched) != 1 || tc.counter.get("PATCH machinesets") != 1 {
				t.Fatalf("pass %d: %v, %+v", i, err, rep.CAPI)
			}
			want := map[int]int{1: 1}[i] // the clone is created once, then found
			if got := tc.counter.get("POST awsmachinetemplates"); got != want {
				t.Errorf("pass %d: %d template creations, want %d", i, got, want)
			}
			clone := &unstructured.Unstructured{}
			clone.SetAPIVersion(InfraGroup + "/v1beta2")
			clone.SetKind("AWSMachineTemplate")
			if err := tc.kube.Client.Get(ctx, client.ObjectKey{Namespace: CAPINamespace, Name: rep.CAPI.Patched[0].Template}, clone); err != nil {
				t.Fatal(err)
			}
			ami, _, _ := unstructured.NestedMap(clone.Object, "spec", "template", "spec", "ami")
			if d := cmp.Diff(map[string]any{"id": "ami-0f9e8d7c6b5a40312"}, ami); d != "" {
				t.Errorf("clone ami (-want +got):\n%s", d)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "hot loop") || tc.counter.get("PATCH machinesets") != 0 || tc.counter.get("POST awsmachinetemplates") != 0 {
			t.Errorf("pass %d: %v, %d patches; want a hot-loop error and no write", i, err, tc.counter.get("PATCH machinesets"))
		}
	}
}
