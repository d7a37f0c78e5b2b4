package bootimage

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// The tests in this file pin kiln to the Machine Config Operator's rules
// (pkg/controller/bootimage at MCO master); each case names the MCO
// function whose behaviour it checks.

// cvWith is a ClusterVersion whose desired release is desired and whose
// history has the given states, newest first.
func cvWith(desired string, states ...configv1.UpdateState) *configv1.ClusterVersion {
	cv := &configv1.ClusterVersion{Status: configv1.ClusterVersionStatus{Desired: configv1.Release{Version: desired}}}
	for _, s := range states {
		cv.Status.History = append(cv.Status.History, configv1.UpdateHistory{State: s, Version: desired})
	}
	return cv
}

// TestStableAsMCO: helpers.go isClusterStable — stable only when history
// has an entry and history[0] is Completed; the ConfigMap's
// MCOReleaseImageVersion stamp decides nothing.
func TestStableAsMCO(t *testing.T) {
	stamped := func(v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{Data: map[string]string{MCOReleaseVersionKey: v}}
	}
	cases := []struct {
		name   string
		cm     *corev1.ConfigMap
		cv     *configv1.ClusterVersion
		stable bool
		why    string
	}{
		{"history[0] Partial defers although the stamp equals desired", stamped("4.20.4"),
			cvWith("4.20.4", configv1.PartialUpdate, configv1.CompletedUpdate), false, "history[0] 4.20.4 is Partial"},
		{"empty history defers although the stamp equals desired", stamped("4.20.3"),
			cvWith("4.20.3"), false, "no history"},
		{"empty history, no stamp", stamped(""), cvWith("4.20.3"), false, "no history"},
		{"history[0] Completed is stable with an old stamp", stamped("4.19.9"),
			cvWith("4.20.3", configv1.CompletedUpdate), true, ""},
		{"history[0] Completed is stable without a stamp", stamped(""),
			cvWith("4.20.3", configv1.CompletedUpdate, configv1.PartialUpdate), true, ""},
		{"history[0] Partial after a Completed one defers", stamped("4.20.3"),
			cvWith("4.20.3", configv1.PartialUpdate, configv1.CompletedUpdate, configv1.CompletedUpdate), false, "Partial"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, why := stable(c.cm, c.cv)
			if ok != c.stable {
				t.Fatalf("stable = %v (%s), want %v", ok, why, c.stable)
			}
			if !strings.Contains(why, c.why) {
				t.Errorf("reason %q does not contain %q", why, c.why)
			}
		})
	}
}

// streamWithout is the test stream with one architecture removed.
func streamWithout(t *testing.T, arch string) *Stream {
	t.Helper()
	cm := testStreamConfigMap(t)
	var doc map[string]any
	if err := json.Unmarshal([]byte(cm.Data[StreamKey]), &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc["architectures"].(map[string]any), arch)
	b, _ := json.Marshal(doc)
	cm.Data[StreamKey] = string(b)
	s, err := ParseStream(cm)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStreamArchMissingAsMCO: a stream without the MachineSet's
// architecture. MCO (platform_helpers.go): Azure and vSphere fail in
// stream.GetArchitecture; AWS skips (GetAwsRegionImage's error is a
// reconcileSkipped); GCP dereferences Architectures[arch] and crashes —
// kiln returns an error instead.
func TestStreamArchMissingAsMCO(t *testing.T) {
	st := streamWithout(t, "aarch64")
	noPlan := machinev1beta1.Image{Publisher: "azureopenshift", Offer: "aro4", SKU: "418-arm", Version: "418.94.20241009", Type: machinev1beta1.AzureImageTypeMarketplaceNoPlan}
	cases := []struct {
		platform configv1.PlatformType
		spec     any
		wantErr  string
		wantSkip string
	}{
		{configv1.AzurePlatformType, azureSpec(noPlan), "does not have architecture 'aarch64'", ""},
		{configv1.GCPPlatformType, gcpSpec(oldGCP), "does not have architecture 'aarch64'", ""},
		{configv1.VSpherePlatformType, vsphereSpec("ci-7xk2p-rhcos-old"), "does not have architecture 'aarch64'", ""},
		{configv1.AWSPlatformType, awsSpec("ami-0123456789abcdef0", "us-east-1"), "", "stream has no AMI for region us-east-1"},
	}
	for _, c := range cases {
		t.Run(string(c.platform), func(t *testing.T) {
			u, _ := UpdaterFor(c.platform)
			plan, err := u.Plan(Input{MachineSet: machineSet(t, "ms", c.spec), Arch: "aarch64", Stream: st, Infra: infra(c.platform)})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("plan %+v err %v, want error %q", plan, err, c.wantErr)
				}
				return
			}
			if err != nil || !strings.Contains(plan.Skip, c.wantSkip) || len(plan.Edits) != 0 {
				t.Fatalf("plan %+v err %v, want skip %q", plan, err, c.wantSkip)
			}
		})
	}
}

// TestVSphereAsMCO: platform_helpers.go reconcileVSphereProviderSpec (no
// platformSpec.vsphere: nothing to do, no error) and vsphere_helpers.go
// createNewVMTemplate (the workspace must match a vCenter and one of its
// failure domains: server, datacenter, datastore, vmGroup and resource pool
// after path.Clean; otherwise an error naming the workspace).
func TestVSphereAsMCO(t *testing.T) {
	st := testStream(t)
	const target = "ci-7xk2p-rhcos-9.6.20261001-0"
	cases := []struct {
		name     string
		infra    func(*configv1.Infrastructure)
		ws       func(*machinev1beta1.Workspace)
		noWS     bool
		wantEdit bool
		wantSkip string
		wantErr  []string
	}{
		{name: "workspace matches a failure domain", wantEdit: true},
		{name: "resource pool equal after path.Clean", wantEdit: true,
			ws: func(w *machinev1beta1.Workspace) { w.ResourcePool += "/" }},
		{name: "no platformSpec.vsphere leaves the MachineSet alone",
			infra:    func(i *configv1.Infrastructure) { i.Spec.PlatformSpec.VSphere = nil },
			wantSkip: "spec.platformSpec.vsphere"},
		{name: "server of no vCenter is refused",
			ws:      func(w *machinev1beta1.Workspace) { w.Server = "vcenter-2.ci.example" },
			wantErr: []string{"MachineSet openshift-machine-api/ms", "server: vcenter-2.ci.example", "does not match any vCenter/failure domain"}},
		{name: "vCenter without failure domains is refused",
			infra:   func(i *configv1.Infrastructure) { i.Spec.PlatformSpec.VSphere.FailureDomains = nil },
			wantErr: []string{"server: vcenter.ci.example", "does not match any vCenter/failure domain"}},
		{name: "failure domain of another server is refused",
			infra: func(i *configv1.Infrastructure) {
				i.Spec.PlatformSpec.VSphere.FailureDomains[0].Server = "vcenter-2.ci.example"
			},
			wantErr: []string{"server: vcenter.ci.example", "does not match any vCenter/failure domain"}},
		{name: "datastore of no failure domain is refused",
			ws:      func(w *machinev1beta1.Workspace) { w.Datastore = "/dc1/datastore/ds9" },
			wantErr: []string{"datastore: /dc1/datastore/ds9", "does not match any vCenter/failure domain"}},
		{name: "vmGroup of no failure domain is refused",
			ws:      func(w *machinev1beta1.Workspace) { w.VMGroup = "vm-group-a" },
			wantErr: []string{"vmGroup: vm-group-a", "does not match any vCenter/failure domain"}},
		{name: "vmGroup of a host-group failure domain matches", wantEdit: true,
			ws: func(w *machinev1beta1.Workspace) { w.VMGroup = "vm-group-a" },
			infra: func(i *configv1.Infrastructure) {
				i.Spec.PlatformSpec.VSphere.FailureDomains[0].ZoneAffinity = &configv1.VSphereFailureDomainZoneAffinity{
					Type: configv1.HostGroupFailureDomainZone, HostGroup: &configv1.VSphereFailureDomainHostGroup{VMGroup: "vm-group-a", HostGroup: "hosts-a", VMHostRule: "rule-a"}}
			}},
		{name: "no workspace is an error, not a crash", noWS: true,
			wantErr: []string{"MachineSet openshift-machine-api/ms", "providerSpec.value.workspace: not set"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := vsphereSpec("ci-7xk2p-rhcos-old")
			if c.ws != nil {
				c.ws(spec.Workspace)
			}
			if c.noWS {
				spec.Workspace = nil
			}
			inf := infra(configv1.VSpherePlatformType)
			if c.infra != nil {
				c.infra(inf)
			}
			plan, err := VSphere{}.Plan(Input{MachineSet: machineSet(t, "ms", spec), Arch: "x86_64", Stream: st, Infra: inf})
			if len(c.wantErr) > 0 {
				if err == nil {
					t.Fatalf("plan %+v, want an error", plan)
				}
				for _, w := range c.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.wantSkip != "" {
				if !strings.Contains(plan.Skip, c.wantSkip) || len(plan.Edits) != 0 {
					t.Fatalf("plan %+v, want skip %q", plan, c.wantSkip)
				}
				return
			}
			if plan.Skip != "" || len(plan.Edits) != 1 || plan.Edits[0].Value != target {
				t.Fatalf("plan %+v, want template → %s", plan, target)
			}
		})
	}
}

// isolationCluster is a folder Cluster holding a GCP cluster with the given stream and
// objects (MachineSets, CAPI objects).
func isolationCluster(t *testing.T, stream string, objs ...any) Cluster {
	t.Helper()
	src := t.TempDir()
	inf := infra(configv1.GCPPlatformType)
	inf.TypeMeta = metav1.TypeMeta{APIVersion: "config.openshift.io/v1", Kind: "Infrastructure"}
	cm := testStreamConfigMap(t)
	cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	if stream != "" {
		cm.Data[StreamKey] = stream
	}
	cv := cvWith("4.20.3", configv1.CompletedUpdate)
	cv.TypeMeta = metav1.TypeMeta{APIVersion: "config.openshift.io/v1", Kind: "ClusterVersion"}
	cv.Name = "version"
	mc := folderMachineConfiguration()
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "worker-user-data", Namespace: MachineAPINamespace}, Data: map[string][]byte{UserDataKey: []byte(stubV35)}}
	writeManifests(t, src, append([]any{inf, cm, cv, mc, secret}, objs...)...)
	d, err := LoadDir(src, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func gcpMachineSet(t *testing.T, name, image string) *machinev1beta1.MachineSet {
	ms := machineSet(t, name, gcpSpec(image))
	ms.TypeMeta = metav1.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: "MachineSet"}
	return ms
}

// TestFailureIsolationAsMCO: boot_image_controller.go syncMAPIMachineSets
// and platform_helpers.go reconcilePlatform — the stream is decoded for
// each MachineSet, so a stream that cannot be parsed (like any other
// per-MachineSet failure) fails only the MachineSets that reach it; the
// others are skipped or patched, and BootImageUpdateDegraded counts each
// failure as MCO words it: "<e> Degraded MAPI MachineSets | … | Error(s): …".
func TestFailureIsolationAsMCO(t *testing.T) {
	owned := gcpMachineSet(t, "c-owned", oldGCP)
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "hive.openshift.io/v1", Kind: "MachinePool", Name: "worker", UID: "4c1b2f0e-1111-4a2b-9c3d-0123456789ab"}}
	badSpec := gcpMachineSet(t, "b-bad-spec", oldGCP)
	badSpec.Spec.Template.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(`{"disks": 7}`)}
	gcpTmpl := func(name, image string) *unstructured.Unstructured {
		u := template(t, gcpTemplateYAML, image)
		u.SetName(name)
		u.SetOwnerReferences(nil)
		return u
	}
	capiSets := []any{
		gcpTmpl("tmpl-a", oldGCP).Object, gcpTmpl("tmpl-b", newGCP).Object,
		capiObject("MachineSet", "capi-a", "GCPMachineTemplate", "tmpl-a", nil).Object,
		capiObject("MachineSet", "capi-b", "GCPMachineTemplate", "tmpl-b", nil).Object,
		capiObject("MachineSet", "capi-missing", "GCPMachineTemplate", "tmpl-gone", nil).Object,
	}
	cases := []struct {
		name   string
		stream string
		objs   []any
		// patched, skipped and failed are the MAPI and CAPI MachineSets of each outcome.
		patched, skipped, failed []string
		capiFailed               []string
		message                  string // the exact prefix of the Degraded message
		errs                     []string
	}{
		{name: "unparseable stream fails each MachineSet that reaches it",
			stream: `{"stream": "rhcos-4.20", "architectures": {`,
			objs:   []any{gcpMachineSet(t, "a", oldGCP), gcpMachineSet(t, "b", newGCP), owned},
			failed: []string{"a", "b"}, skipped: []string{"c-owned"},
			message: "2 Degraded MAPI MachineSets | 0 Degraded CAPI MachineSets | Error(s): [error syncing MAPI MachineSet a: ",
			errs:    []string{`error syncing MAPI MachineSet b: `, `ConfigMap openshift-machine-config-operator/coreos-bootimages key "stream"`, "CoreOS stream metadata"}},
		{name: "stream without architectures fails each MachineSet",
			stream: `{"stream": "rhcos-4.20"}`,
			objs:   []any{gcpMachineSet(t, "a", oldGCP)},
			failed: []string{"a"}, message: "1 Degraded MAPI MachineSets | 0 Degraded CAPI MachineSets | Error(s): error syncing MAPI MachineSet a: ",
			errs: []string{"no architectures"}},
		{name: "one bad providerSpec does not stop the others",
			objs:    []any{gcpMachineSet(t, "a", oldGCP), badSpec, owned},
			patched: []string{"a"}, failed: []string{"b-bad-spec"}, skipped: []string{"c-owned"},
			message: "1 Degraded MAPI MachineSets | 0 Degraded CAPI MachineSets | Error(s): error syncing MAPI MachineSet b-bad-spec: ",
			errs:    []string{"spec.template.spec.providerSpec.value"}},
		{name: "Cluster API: unparseable stream fails each CAPI MachineSet",
			stream:     `{"stream": "rhcos-4.20", "architectures": {`,
			objs:       capiSets,
			capiFailed: []string{"capi-a", "capi-b", "capi-missing"},
			message:    "0 Degraded MAPI MachineSets | 3 Degraded CAPI MachineSets | Error(s): [error syncing CAPI MachineSet capi-a: ",
			errs:       []string{"CoreOS stream metadata", "error syncing CAPI MachineSet capi-missing: "}},
		{name: "Cluster API: a missing template fails only its MachineSet",
			objs:       capiSets,
			patched:    []string{"capi-a"},
			capiFailed: []string{"capi-missing"},
			message:    "0 Degraded MAPI MachineSets | 1 Degraded CAPI MachineSets | Error(s): error syncing CAPI MachineSet capi-missing: ",
			errs:       []string{"tmpl-gone"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := isolationCluster(t, c.stream, c.objs...)
			metrics := filepath.Join(t.TempDir(), "metrics.prom")
			r := &Reconciler{Cluster: d, Namespace: MachineAPINamespace, DefaultArch: "x86_64", StableTimeout: time.Second, StablePoll: 10 * time.Millisecond,
				CAPI: CAPIOptIn{Mode: CAPIAll, Selector: labels.Everything()}, NoHistory: true}
			rep, err := r.Run(context.Background())
			if err == nil {
				t.Fatal("Run succeeded; want the failures reported")
			}
			capi := rep.CAPI
			if capi == nil {
				capi = &CAPIReport{}
			}
			names := func(os []Outcome) []string {
				var n []string
				for _, o := range os {
					n = append(n, o.Name)
				}
				return n
			}
			check := func(what string, got, want []string) {
				if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
					t.Errorf("%s (-want +got):\n%s", what, d)
				}
			}
			check("MAPI failed", names(rep.Errors), c.failed)
			check("CAPI failed", names(capi.Errors), c.capiFailed)
			check("skipped", append(names(rep.Skipped), names(capi.Skipped)...), c.skipped)
			check("patched", append(names(rep.Patched), names(capi.Patched)...), c.patched)
			mc, _ := d.MachineConfiguration(context.Background())
			deg := condition(mc, ConditionDegraded)
			if deg == nil || deg.Status != metav1.ConditionTrue || !strings.HasPrefix(deg.Message, c.message) {
				t.Fatalf("Degraded condition %+v, want message starting %q", deg, c.message)
			}
			for _, e := range c.errs {
				if !strings.Contains(deg.Message, e) {
					t.Errorf("Degraded message %q does not contain %q", deg.Message, e)
				}
			}
			if err := WriteMetrics(metrics, rep, true, "", 0); err != nil {
				t.Fatal(err)
			}
			prom, _ := os.ReadFile(metrics)
			want := `kiln_bootimage_machinesets{state="degraded"} ` + itoa(len(c.failed)+len(c.capiFailed))
			if !strings.Contains(string(prom), want) {
				t.Errorf("metrics lack %q:\n%s", want, prom)
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestDeliberateDifferencesFromMCO: where kiln is stricter than MCO or keeps
// user data MCO would drop (README.md "Differences from MCO"). Each subtest
// states the difference in its name.
func TestDeliberateDifferencesFromMCO(t *testing.T) {
	st := testStream(t)
	t.Run("unknown providerSpec fields are kept (MCO re-encodes the typed spec and drops them)", func(t *testing.T) {
		ms := machineSet(t, "ms", gcpSpec(oldGCP))
		var doc map[string]any
		_ = json.Unmarshal(ms.Spec.Template.Spec.ProviderSpec.Value.Raw, &doc)
		doc["futureField"] = map[string]any{"keep": "me"}
		ms.Spec.Template.Spec.ProviderSpec.Value.Raw, _ = json.Marshal(doc)
		plan, err := GCP{}.Plan(Input{MachineSet: ms, Arch: "x86_64", Stream: st, Infra: infra(configv1.GCPPlatformType)})
		if err != nil {
			t.Fatal(err)
		}
		next, err := plan.Spec.Apply(plan.Edits)
		if err != nil {
			t.Fatal(err)
		}
		var after map[string]any
		_ = json.Unmarshal(next, &after)
		if got := changedPaths(doc, after); len(got) != 1 || got[".disks[0].image"] != newGCP {
			t.Fatalf("changed %v, want only the boot image", got)
		}
	})
	t.Run("Azure Hyper-V generation is kept for an unpaid image without type (MCO moves gen1 to gen2)", func(t *testing.T) {
		// MCO (platform_helpers.go reconcileAzureProviderSpec) reads the
		// generation from the SKU's "v2" only when type is MarketplaceNoPlan;
		// otherwise gen2 unless the SKU says gen1, so "aro_418" became gen2.
		spec := azureSpec(machinev1beta1.Image{Publisher: "azureopenshift", Offer: "aro4", SKU: "aro_418", Version: "418.94.20241009"})
		plan, err := Azure{}.Plan(Input{MachineSet: machineSet(t, "ms", spec), Arch: "x86_64", Stream: st, Infra: infra(configv1.AzurePlatformType)})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan.Target, ":aro_420:") {
			t.Fatalf("target %s, want the generation 1 SKU aro_420", plan.Target)
		}
	})
	t.Run("GCP stream without the architecture is an error (MCO dereferences a nil entry and crashes)", func(t *testing.T) {
		_, err := GCP{}.Plan(Input{MachineSet: machineSet(t, "ms", gcpSpec(oldGCP)), Arch: "aarch64", Stream: streamWithout(t, "aarch64"), Infra: infra(configv1.GCPPlatformType)})
		if err == nil || !strings.Contains(err.Error(), "does not have architecture 'aarch64'") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("GCP stream without a GCP image is an error (MCO dereferences a nil image and crashes)", func(t *testing.T) {
		s := streamWithout(t, "none")
		a := s.Architectures["x86_64"]
		a.Images.Gcp = nil
		s.Architectures["x86_64"] = a
		_, err := GCP{}.Plan(Input{MachineSet: machineSet(t, "ms", gcpSpec(oldGCP)), Arch: "x86_64", Stream: s, Infra: infra(configv1.GCPPlatformType)})
		if err == nil || !strings.Contains(err.Error(), "has no GCP image") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("vSphere without platformSpec.vsphere is counted as skipped (MCO logs it and counts it reconciled)", func(t *testing.T) {
		inf := infra(configv1.VSpherePlatformType)
		inf.Spec.PlatformSpec.VSphere = nil
		plan, err := VSphere{}.Plan(Input{MachineSet: machineSet(t, "ms", vsphereSpec("ci-7xk2p-rhcos-old")), Arch: "x86_64", Stream: st, Infra: inf})
		if err != nil || plan.Skip != reasonNoVSphereSpec {
			t.Fatalf("plan %+v err %v", plan, err)
		}
	})
}
