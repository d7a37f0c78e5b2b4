package bootimage

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcfgv1alpha1 "github.com/kiln-dev/kiln/pkg/apis/machineconfiguration/v1alpha1"
)

const (
	optInLabel = "kiln.dev/test-boot-images"
	stubV22    = `{"ignition":{"version":"2.2.0","config":{"append":[{"source":"https://api-int.ci.example:22623/config/worker"}]},"security":{"tls":{"certificateAuthorities":[{"source":"data:text/plain;charset=utf-8;base64,c2VjcmV0LWNh"}]}}}}`
	stubV35    = `{"ignition":{"version":"3.5.0","config":{"merge":[{"source":"https://api-int.ci.example:22623/config/worker"}]}}}`
)

// fleetCase is one MachineSet of the 20-MachineSet fleet and what must
// happen to it.
type fleetCase struct {
	name   string
	image  string
	optIn  bool
	mutate func(*machinev1beta1.MachineSet)
	secret string // user-data secret name; default worker-user-data
	// want is "patched", "uptodate", "skipped:<reason substring>" or "untouched" (not enrolled).
	want string
}

func owned(ms *machinev1beta1.MachineSet) {
	ms.OwnerReferences = []metav1.OwnerReference{{APIVersion: "hive.openshift.io/v1", Kind: "MachinePool", Name: "worker", UID: "4c1b2f0e-1111-4a2b-9c3d-0123456789ab"}}
}

func fleet() []fleetCase {
	var fc []fleetCase
	for i := 0; i < 6; i++ {
		fc = append(fc, fleetCase{name: fmt.Sprintf("stale-%d", i), image: oldGCP, optIn: true, want: "patched"})
	}
	for i := 0; i < 3; i++ {
		fc = append(fc, fleetCase{name: fmt.Sprintf("current-%d", i), image: newGCP, optIn: true, want: "uptodate"})
	}
	fc = append(fc,
		fleetCase{name: "owned-0", image: oldGCP, optIn: true, mutate: owned, want: "skipped:" + ReasonOwned},
		fleetCase{name: "owned-1", image: newGCP, optIn: true, mutate: owned, want: "skipped:" + ReasonOwned},
		fleetCase{name: "rhel10", image: oldGCP, optIn: true, want: "skipped:" + ReasonOSStream,
			mutate: func(ms *machinev1beta1.MachineSet) { ms.Labels[OSStreamLabel] = "rhel-10" }},
		fleetCase{name: "rhel9-labelled", image: oldGCP, optIn: true, want: "patched",
			mutate: func(ms *machinev1beta1.MachineSet) { ms.Labels[OSStreamLabel] = "rhel-9" }},
		fleetCase{name: "windows", image: oldGCP, optIn: true, want: "skipped:" + ReasonWindows,
			mutate: func(ms *machinev1beta1.MachineSet) { ms.Spec.Template.Labels[OSIDLabel] = "Windows" }},
		fleetCase{name: "custom-image", image: "projects/acme/global/images/golden", optIn: true, want: "skipped:custom boot image"},
		fleetCase{name: "arm64", image: oldGCP, optIn: true, want: "patched",
			mutate: func(ms *machinev1beta1.MachineSet) {
				ms.Annotations = map[string]string{ArchAnnotation: "kubernetes.io/arch=arm64,topology.kubernetes.io/zone=us-central1-a"}
			}},
		fleetCase{name: "old-stub", image: oldGCP, optIn: true, secret: "legacy-user-data", want: "patched"},
	)
	for i := 0; i < 3; i++ {
		fc = append(fc, fleetCase{name: fmt.Sprintf("opted-out-%d", i), image: oldGCP, want: "untouched"})
	}
	return fc
}

func createFleet(t testing.TB, tc *testCluster, ns string, cases []fleetCase) {
	t.Helper()
	for _, c := range cases {
		spec := gcpSpec(c.image)
		if c.secret != "" {
			spec.UserDataSecret.Name = c.secret
		}
		ms := machineSet(t, c.name, spec)
		ms.Namespace = ns
		ms.Labels = map[string]string{}
		if c.optIn {
			ms.Labels[optInLabel] = "on"
		}
		if c.mutate != nil {
			c.mutate(ms)
		}
		tc.create(t, ms)
	}
}

func TestFleetOnAPIServer(t *testing.T) {
	tc := startCluster(t, configv1.GCPPlatformType)
	ctx := context.Background()
	ns := MachineAPINamespace
	tc.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "worker-user-data", Namespace: ns}, Data: map[string][]byte{UserDataKey: []byte(stubV35)}})
	tc.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "legacy-user-data", Namespace: ns}, Data: map[string][]byte{UserDataKey: []byte(stubV22)}})
	cases := fleet()
	if len(cases) != 20 {
		t.Fatalf("fleet has %d MachineSets, want 20", len(cases))
	}
	createFleet(t, tc, ns, cases)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{optInLabel: "on"}}
	tc.setOptIn(t, mapi(operatorv1.Partial, selector))

	before := map[string]machinev1beta1.MachineSet{}
	list := &machinev1beta1.MachineSetList{}
	if err := tc.kube.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, ms := range list.Items {
		before[ms.Name] = ms
	}

	cm := &corev1.ConfigMap{}
	if err := tc.kube.Client.Get(ctx, client.ObjectKey{Namespace: MCONamespace, Name: BootImagesConfigMap}, cm); err != nil {
		t.Fatal(err)
	}
	cmGen, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	tc.counter.reset()
	var log strings.Builder
	r := tc.reconciler(ns)
	r.Log = &log
	rep, err := r.Run(ctx)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}

	var wantPatched, gotPatched []string
	for _, c := range cases {
		if c.want == "patched" {
			wantPatched = append(wantPatched, c.name)
		}
	}
	for _, o := range rep.Patched {
		gotPatched = append(gotPatched, o.Name)
	}
	sort.Strings(wantPatched)
	if d := cmp.Diff(wantPatched, gotPatched); d != "" {
		t.Errorf("patched (-want +got):\n%s", d)
	}
	if got := tc.counter.get("PATCH machinesets"); got != len(wantPatched) {
		t.Errorf("MachineSet PATCH requests: %d, want exactly one per stale MachineSet (%d)", got, len(wantPatched))
	}
	if rep.Enrolled != 17 {
		t.Errorf("enrolled %d, want 17", rep.Enrolled)
	}
	skips := map[string]string{}
	for _, s := range rep.Skipped {
		skips[s.Name] = s.Reason
	}

	after := &machinev1beta1.MachineSetList{}
	if err := tc.kube.Client.List(ctx, after, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, ms := range after.Items {
		var c fleetCase
		for _, x := range cases {
			if x.name == ms.Name {
				c = x
			}
		}
		old := before[ms.Name]
		switch {
		case c.want == "patched":
			want := newGCP
			if ms.Name == "arm64" {
				want = "projects/rhcos-cloud/global/images/rhcos-9-6-20261001-0-gcp-aarch64"
			}
			var b, a any
			_ = json.Unmarshal(old.Spec.Template.Spec.ProviderSpec.Value.Raw, &b)
			_ = json.Unmarshal(ms.Spec.Template.Spec.ProviderSpec.Value.Raw, &a)
			if d := cmp.Diff(map[string]any{".disks[0].image": want}, changedPaths(b, a)); d != "" {
				t.Errorf("%s: providerSpec changes, want only disks[0].image (-want +got):\n%s", ms.Name, d)
			}
			outside := func(s machinev1beta1.MachineSetSpec) []any {
				return []any{s.Template.ObjectMeta, s.Replicas, s.Selector}
			}
			if d := cmp.Diff(outside(old.Spec), outside(ms.Spec)); d != "" {
				t.Errorf("%s: fields outside providerSpec changed (-before +after):\n%s", ms.Name, d)
			}
			if ms.Annotations[HotLoopAnnotation] == "" {
				t.Errorf("%s: no hot-loop record", ms.Name)
			}
			h := &mcfgv1alpha1.BootImageHistory{}
			if err := tc.kube.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ms.Name + "-mapi-machineset"}, h); err != nil {
				t.Errorf("%s: history: %v", ms.Name, err)
			} else if d := h.Status.Details; len(d) != 1 || d[0].BootImageVersion != "9.6.20261001-0" || d[0].BootImage != want || d[0].ConfigMapGeneration != cmGen ||
				h.Spec.MachineResourceReference != (mcfgv1alpha1.MachineResourceReference{Name: ms.Name, Resource: "MachineSet", APIGroup: "machine.openshift.io"}) {
				t.Errorf("%s: history %+v", ms.Name, h)
			}
		default:
			if ms.ResourceVersion != old.ResourceVersion {
				t.Errorf("%s (%s): written, resourceVersion %s → %s", ms.Name, c.want, old.ResourceVersion, ms.ResourceVersion)
			}
			if r, ok := strings.CutPrefix(c.want, "skipped:"); ok && !strings.Contains(skips[ms.Name], r) {
				t.Errorf("%s: skip reason %q, want %q", ms.Name, skips[ms.Name], r)
			}
		}
	}

	// The spec 2.2 stub became 3.5 in place, with the annotations.
	sec := &corev1.Secret{}
	if err := tc.kube.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "legacy-user-data"}, sec); err != nil {
		t.Fatal(err)
	}
	if _, v, changed, err := UpgradeStub(sec.Data[UserDataKey]); err != nil || changed || v != "3.5.0" {
		t.Errorf("stub after upgrade: version %q changed %v err %v", v, changed, err)
	}
	if sec.Annotations[StubUpgradedToAnnotation] != "3.5.0" || sec.Annotations[StubUpgradedAtAnnotation] == "" {
		t.Errorf("stub annotations %v", sec.Annotations)
	}
	if tc.counter.get("PUT secrets") != 1 {
		t.Errorf("secret writes %d, want 1", tc.counter.get("PUT secrets"))
	}
	if strings.Contains(log.String(), "c2VjcmV0LWNh") || strings.Contains(log.String(), "api-int.ci.example") {
		t.Errorf("log leaks user-data:\n%s", log.String())
	}

	// Status: the effective opt-in and the x-of-y conditions.
	mc := tc.machineConfiguration(t)
	if d := cmp.Diff([]operatorv1.MachineManager{mapi(operatorv1.Partial, selector)}, mc.Status.ManagedBootImagesStatus.MachineManagers); d != "" {
		t.Errorf("managedBootImagesStatus (-want +got):\n%s", d)
	}
	prog, deg := condition(mc, ConditionProgressing), condition(mc, ConditionDegraded)
	if prog == nil || prog.Status != metav1.ConditionFalse || !strings.HasPrefix(prog.Message, "Reconciled 17 of 17 MAPI MachineSets (9 patched, 3 up to date, 5 skipped)") {
		t.Errorf("progressing %+v", prog)
	}
	if deg == nil || deg.Status != metav1.ConditionFalse || deg.Message != "0 Degraded MAPI MachineSets | 0 Degraded CAPI MachineSets" {
		t.Errorf("degraded %+v", deg)
	}

	// A second pass finds nothing stale: no MachineSet writes at all.
	tc.counter.reset()
	rep, err = tc.reconciler(ns).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := tc.counter.get("PATCH machinesets"); n != 0 || len(rep.Patched) != 0 || len(rep.UpToDate) != 12 {
		t.Errorf("second pass: %d MachineSet writes, %d patched, %d up to date", n, len(rep.Patched), len(rep.UpToDate))
	}
}
