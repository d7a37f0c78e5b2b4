package mcrender

import (
	"context"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestDeliberateDifferencesFromMCO: where render is stricter than MCO on
// purpose (doc.go). Each subtest states the difference in its name.
func TestDeliberateDifferencesFromMCO(t *testing.T) {
	worker := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"},
		Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{RoleLabel: "worker"}}}}
	mc := func(name string, raw string, ext ...string) *mcfgv1.MachineConfig {
		m := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{RoleLabel: "worker"}},
			Spec: mcfgv1.MachineConfigSpec{Extensions: ext}}
		if raw != "" {
			m.Spec.Config = runtime.RawExtension{Raw: []byte(raw)}
		}
		return m
	}
	base := mc("00-worker", `{"ignition":{"version":"3.5.0"}}`)
	t.Run("extensions of an MC without an Ignition config are checked (MCO checks them only with a config)", func(t *testing.T) {
		// MCO's ValidateMachineConfig (pkg/controller/common/helpers.go)
		// checks the extension allowlist only when spec.config is set.
		_, err := Render(context.Background(), Request{Pool: worker, Configs: []*mcfgv1.MachineConfig{base, mc("50-ext", "", "wireshark")}, Defaults: sizeDefaults})
		if err == nil || !strings.Contains(err.Error(), `MachineConfig "50-ext": spec.extensions[0]: "wireshark" is not a supported extension`) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("the same extension with a config is refused as MCO refuses it", func(t *testing.T) {
		_, err := Render(context.Background(), Request{Pool: worker, Configs: []*mcfgv1.MachineConfig{base, mc("50-ext", `{"ignition":{"version":"3.5.0"}}`, "wireshark")}, Defaults: sizeDefaults})
		if err == nil || !strings.Contains(err.Error(), `"wireshark" is not a supported extension`) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("the size limit is measured on MCO's object, not on the one kiln writes (kiln's carries kiln.dev/ metadata)", func(t *testing.T) {
		res, err := Render(context.Background(), Request{Pool: worker, Configs: []*mcfgv1.MachineConfig{base}, Defaults: sizeDefaults})
		if err != nil {
			t.Fatal(err)
		}
		got, err := mcoSize(worker, res.Inputs, res.Config.Name, res.Config.Spec, sizeDefaults)
		if err != nil {
			t.Fatal(err)
		}
		want := mcoBytes(t, res.Config.Name, placeholderHash, placeholderUID, false, res.Config.Spec)
		if got != want {
			t.Fatalf("measured %d bytes, MCO's object has %d", got, want)
		}
	})
}
