package moduleday0

import (
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// TestSyncWakesOnlyForKMMManagedMachineConfigs: an MC that is, or was,
// kmm-managed wakes the sync (gaining and losing the label included); the
// edit of any other MC does not.
func TestSyncWakesOnlyForKMMManagedMachineConfigs(t *testing.T) {
	mc := func(kmm string) *mcfgv1.MachineConfig {
		m := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-worker-kmods", Labels: map[string]string{roleLabel: "worker"}}}
		if kmm != "" {
			m.Labels[KMMManagedLabel] = kmm
		}
		return m
	}
	cases := []struct {
		name     string
		old, new string // KMMManagedLabel; "" is absent
		want     bool
	}{
		{"managed edited", "true", "true", true},
		{"label added", "", "true", true},
		{"label removed", "true", "", true},
		{"label turned false", "true", "false", true},
		{"other MC edited", "", "", false},
		{"label false", "false", "false", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := kmmManaged.Update(event.UpdateEvent{ObjectOld: mc(tc.old), ObjectNew: mc(tc.new)}); got != tc.want {
				t.Errorf("update: %v, want %v", got, tc.want)
			}
			// Create and delete see one object: the new one, the old one.
			if got, want := kmmManaged.Create(event.CreateEvent{Object: mc(tc.new)}), tc.new == "true"; got != want {
				t.Errorf("create: %v, want %v", got, want)
			}
			if got, want := kmmManaged.Delete(event.DeleteEvent{Object: mc(tc.old)}), tc.old == "true"; got != want {
				t.Errorf("delete: %v, want %v", got, want)
			}
		})
	}
}
