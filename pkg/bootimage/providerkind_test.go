package bootimage

import (
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
)

// TestProviderKindGuard: a providerSpec of another platform's kind is
// skipped with a reason naming both kinds; the platform's own kind, a
// providerSpec without kind and unsupported platforms pass to the updater.
func TestProviderKindGuard(t *testing.T) {
	cases := []struct {
		name     string
		platform configv1.PlatformType
		spec     string
		want     string
	}{
		{"same kind", configv1.GCPPlatformType, `{"kind":"GCPMachineProviderSpec","disks":[]}`, ""},
		{"no kind", configv1.GCPPlatformType, `{"disks":[]}`, ""},
		{"aws on gcp", configv1.GCPPlatformType, `{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig","ami":{"id":"ami-1"}}`,
			"providerSpec is for another platform (kind AWSMachineProviderConfig; platform GCP uses GCPMachineProviderSpec)"},
		{"gcp on aws", configv1.AWSPlatformType, `{"kind":"GCPMachineProviderSpec"}`, ReasonProviderKind},
		{"vsphere on azure", configv1.AzurePlatformType, `{"kind":"VSphereMachineProviderSpec"}`, ReasonProviderKind},
		{"unsupported platform", configv1.BareMetalPlatformType, `{"kind":"AWSMachineProviderConfig"}`, ""},
		{"not an object", configv1.GCPPlatformType, `[1]`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ms := machineSet(t, "m", nil)
			ms.Spec.Template.Spec.ProviderSpec.Value.Raw = []byte(c.spec)
			got := providerKindGuard(ms, c.platform)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
