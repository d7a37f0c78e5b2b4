package mcrender

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// spec.osImageURL must be an image reference both kiln's registry client
// and the node's runtime parse; the error names the MachineConfig, the
// field and the value.
func TestValidateSpecParsesOSImageURL(t *testing.T) {
	digest := "@sha256:" + strings.Repeat("a", 64)
	cases := []struct{ url, want string }{
		{"quay.io/openshift/os" + digest, ""},
		{"quay.io/openshift/os:4.20", ""},
		{"quay.io//os" + digest, `MachineConfig "99-os": spec.osImageURL "quay.io//os` + digest + `": not an image reference: invalid reference format`},
		{"quay.io/os;$(id)", `MachineConfig "99-os": spec.osImageURL "quay.io/os;$(id)": not an image reference: `},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			mc := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-os"}, Spec: mcfgv1.MachineConfigSpec{OSImageURL: c.url}}
			got := ""
			if err := validateSpec(mc); err != nil {
				got = err.Error()
				if c.want != "" && strings.HasPrefix(got, c.want) {
					got = c.want
				}
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
