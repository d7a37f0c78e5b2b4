package mcrender

import (
	"crypto/md5" //nolint:gosec // checks MCO's salt
	"encoding/hex"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The expected values were computed outside Go (Python hashlib over the salt
// parsed from MCO's hash.go and the YAML go-yaml v2 emits for the spec), so
// a slip in the salt, the encoder or the key order fails here.
func TestSaltIsMCOs(t *testing.T) {
	sum := md5.Sum(salt) //nolint:gosec // see above
	if got := hex.EncodeToString(sum[:]); got != "700188197863063935efbc7c9ae4e300" || len(salt) != 80 {
		t.Fatalf("salt md5 = %s (len %d), want MCO's 700188197863063935efbc7c9ae4e300 (80 bytes)", got, len(salt))
	}
}

func TestRenderedName(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec mcfgv1.MachineConfigSpec
		want string
	}{{
		name: "empty config",
		spec: mcfgv1.MachineConfigSpec{
			Config:          runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)},
			KernelArguments: []string{}, Extensions: []string{}, KernelType: "default",
		},
		want: "rendered-worker-6da92b29d98fcd722bbf117520c22ee4",
	}, {
		name: "every field",
		spec: mcfgv1.MachineConfigSpec{
			OSImageURL: "quay.io/x/os:1", BaseOSExtensionsContainerImage: "quay.io/x/ext:1",
			Config:          runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"overwrite":true,"path":"/etc/hi","contents":{"source":"data:,hi"},"mode":420}]}}`)},
			KernelArguments: []string{"nosmt", "nosmt"}, Extensions: []string{"usbguard"}, FIPS: true, KernelType: "realtime",
		},
		want: "rendered-worker-513b2314ae24cd8bb2ac06d2c3526c40",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderedName("worker", tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("RenderedName = %s, want %s", got, tc.want)
			}
		})
	}
}

// MCO stores the merged config with clarketm/json, which drops empty
// structs; encoding/json would add "config":{},"security":{"tls":{}},… and
// change every rendered name.
func TestMergedConfigEncodingMatchesMCO(t *testing.T) {
	spec, _, err := merge([]parsed{{mc: &mcfgv1.MachineConfig{}}}, Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(spec.Config.Raw); got != `{"ignition":{"version":"3.5.0"}}` {
		t.Errorf("merged empty config = %s", got)
	}
}
