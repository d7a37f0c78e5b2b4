package mcsize

import (
	"bytes"
	"encoding/json"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestMeasureIgnoresIndentation measures a rendered config whose
// spec.config is compact and the same config read back from an indented
// file: MCO's measure is the same for both, and FromObject takes the pool,
// its UID, the release version and the override from the object render
// wrote.
func TestMeasureIgnoresIndentation(t *testing.T) {
	raw := []byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a%20<b>"},"mode":420}]}}`)
	yes := true
	mc := &mcfgv1.MachineConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: "rendered-worker-1", Labels: map[string]string{"kiln.dev/pool": "worker"},
			Annotations:     map[string]string{ReleaseVersionAnnotation: "4.20.0", OverriddenAnnotation: "true", "kiln.dev/inputs": "a,b"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "MachineConfigPool", Name: "worker", UID: "5d3c1a8e-7f42-4b9e-a1c3-9e8f7d6c5b4a", Controller: &yes}}},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}},
	}
	indented, err := json.MarshalIndent(mc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	back := &mcfgv1.MachineConfig{}
	if err := json.Unmarshal(indented, back); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(back.Spec.Config.Raw, raw) {
		t.Fatal("the read-back spec.config is not indented; the test proves nothing")
	}
	r := FromObject(back, "kiln.dev/pool")
	if r.Pool != "worker" || r.PoolUID != "5d3c1a8e-7f42-4b9e-a1c3-9e8f7d6c5b4a" || r.ReleaseVersion != "4.20.0" || !r.Overridden {
		t.Errorf("FromObject = %+v", r)
	}
	want, err := Measure(FromObject(mc, "kiln.dev/pool"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Measure(r); err != nil || got != want {
		t.Errorf("Measure of the indented read-back = %d, %v; of the compact object %d", got, err, want)
	}
}
