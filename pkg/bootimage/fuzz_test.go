package bootimage

import (
	"encoding/json"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// FuzzProviderSpec feeds arbitrary providerSpec values to every platform's
// decoder and updater: no panic, and an accepted plan must apply to valid
// JSON that still decodes as the platform's type.
func FuzzProviderSpec(f *testing.F) {
	for _, s := range []any{gcpSpec(oldGCP), awsSpec("ami-0123456789abcdef0", "us-east-1"),
		azureSpec(machinev1beta1.Image{ResourceID: "/galleries/g/images/x-gen2"}), vsphereSpec("ci-7xk2p-rhcos-a")} {
		b, _ := json.Marshal(s)
		f.Add(b)
	}
	f.Add([]byte(`{"disks":[null,{"boot":true,"image":"projects/rhcos-cloud/global/images/x"}]}`))
	f.Add([]byte(`{"ami":{"id":""},"placement":{}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"image":{"publisher":"redhat","offer":"rh-ocp-worker"}}`))
	st := testStream(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, p := range []configv1.PlatformType{configv1.GCPPlatformType, configv1.AWSPlatformType, configv1.AzurePlatformType, configv1.VSpherePlatformType} {
			u, _ := UpdaterFor(p)
			ms := &machinev1beta1.MachineSet{}
			ms.Name, ms.Namespace = "fuzz", MachineAPINamespace
			ms.Spec.Template.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: raw}
			plan, err := u.Plan(Input{MachineSet: ms, Arch: "x86_64", Stream: st, Infra: infra(p)})
			if err != nil || len(plan.Edits) == 0 {
				continue
			}
			out, err := plan.Spec.Apply(plan.Edits)
			if err != nil {
				t.Fatalf("%s: planned edits %v do not apply: %v", p, plan.Edits, err)
			}
			ms.Spec.Template.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: out}
			again, err := u.Plan(Input{MachineSet: ms, Arch: "x86_64", Stream: st, Infra: infra(p)})
			if err != nil {
				t.Fatalf("%s: patched spec no longer decodes: %v", p, err)
			}
			if len(again.Edits) != 0 {
				t.Fatalf("%s: not idempotent: second plan %v", p, again.Edits)
			}
		}
	})
}

// FuzzParseStream: arbitrary ConfigMap content is an error or a stream,
// never a panic.
func FuzzParseStream(f *testing.F) {
	f.Add(testStreamConfigMap(f).Data[StreamKey])
	f.Add(`{"architectures":{"x86_64":{"rhel-coreos-extensions":{"marketplace":{"azure":null}}}}}`)
	f.Add(`{"architectures":{}}`)
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseStream(&corev1.ConfigMap{Data: map[string]string{StreamKey: s}})
		if err == nil && len(st.Architectures) == 0 {
			t.Fatal("accepted a stream without architectures")
		}
	})
}

// FuzzUpgradeStub: arbitrary user-data is converted, kept, or refused,
// never a panic, and a converted stub is spec 3 and stable.
func FuzzUpgradeStub(f *testing.F) {
	f.Add([]byte(stubV22))
	f.Add([]byte(stubV35))
	f.Add([]byte(`{"ignition":{"version":"2.1.0"}}`))
	f.Add([]byte(`{"ignition":{"version":"1"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, v, changed, err := UpgradeStub(b)
		if err != nil || !changed {
			return
		}
		if _, v2, changed2, err := UpgradeStub(out); err != nil || changed2 || v2 != v {
			t.Fatalf("converted stub (%s) is not stable: %s %v %v", v, v2, changed2, err)
		}
	})
}
