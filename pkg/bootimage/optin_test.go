package bootimage

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func mapi(mode operatorv1.MachineManagerSelectorMode, sel *metav1.LabelSelector) operatorv1.MachineManager {
	m := operatorv1.MachineManager{Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI,
		Selection: operatorv1.MachineManagerSelector{Mode: mode}}
	if sel != nil {
		m.Selection.Partial = &operatorv1.PartialSelector{MachineResourceSelector: sel}
	}
	return m
}

// TestEffectiveManagedBootImages covers the enhancement's three status scenarios
// and the legacy empty-list opt-out.
func TestEffectiveManagedBootImages(t *testing.T) {
	partial := &metav1.LabelSelector{MatchLabels: map[string]string{"region": "east"}}
	cpms := operatorv1.MachineManager{Resource: operatorv1.ControlPlaneMachineSets, APIGroup: operatorv1.MachineAPI,
		Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.All}}
	cases := []struct {
		name      string
		spec      operatorv1.ManagedBootImages
		prior     operatorv1.ManagedBootImages
		defaultOn bool
		want      []operatorv1.MachineManager
	}{
		{name: "no admin config, release not default-on", want: []operatorv1.MachineManager{mapi(operatorv1.None, nil)}},
		{name: "no admin config, release default-on", defaultOn: true, want: []operatorv1.MachineManager{mapi(operatorv1.All, nil)}},
		{name: "admin Partial wins over default-on", defaultOn: true,
			spec: operatorv1.ManagedBootImages{MachineManagers: []operatorv1.MachineManager{mapi(operatorv1.Partial, partial)}},
			want: []operatorv1.MachineManager{mapi(operatorv1.Partial, partial)}},
		{name: "admin None wins over default-on", defaultOn: true,
			spec: operatorv1.ManagedBootImages{MachineManagers: []operatorv1.MachineManager{mapi(operatorv1.None, nil)}},
			want: []operatorv1.MachineManager{mapi(operatorv1.None, nil)}},
		{name: "empty list is the legacy opt-out", defaultOn: true,
			spec: operatorv1.ManagedBootImages{MachineManagers: []operatorv1.MachineManager{}},
			want: []operatorv1.MachineManager{}},
		{name: "other entries are mirrored, prior order kept", defaultOn: true,
			spec:  operatorv1.ManagedBootImages{MachineManagers: []operatorv1.MachineManager{cpms}},
			prior: operatorv1.ManagedBootImages{MachineManagers: []operatorv1.MachineManager{cpms, mapi(operatorv1.None, nil)}},
			want:  []operatorv1.MachineManager{cpms, mapi(operatorv1.All, nil)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := EffectiveManagedBootImages(tc.spec, tc.prior, tc.defaultOn)
			if d := cmp.Diff(tc.want, got.MachineManagers); d != "" {
				t.Fatalf("machine managers (-want +got):\n%s", d)
			}
		})
	}
}

func TestEnrollment(t *testing.T) {
	east := labels.Set{"region": "east"}
	west := labels.Set{"region": "west"}
	cases := []struct {
		name       string
		m          []operatorv1.MachineManager
		east, west bool
		wantErr    bool
	}{
		{name: "All", m: []operatorv1.MachineManager{mapi(operatorv1.All, nil)}, east: true, west: true},
		{name: "None", m: []operatorv1.MachineManager{mapi(operatorv1.None, nil)}},
		{name: "no entry"},
		{name: "Partial", m: []operatorv1.MachineManager{mapi(operatorv1.Partial, &metav1.LabelSelector{MatchLabels: east})}, east: true},
		{name: "Partial empty selector selects all", m: []operatorv1.MachineManager{mapi(operatorv1.Partial, &metav1.LabelSelector{})}, east: true, west: true},
		{name: "Partial without selector", m: []operatorv1.MachineManager{mapi(operatorv1.Partial, nil)}, wantErr: true},
		{name: "bad selector", m: []operatorv1.MachineManager{mapi(operatorv1.Partial, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}})}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := Enrollment(operatorv1.ManagedBootImages{MachineManagers: tc.m}, operatorv1.MachineSets, operatorv1.MachineAPI)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v", err)
			}
			if err != nil {
				return
			}
			if sel == nil {
				if tc.east || tc.west {
					t.Fatal("nil selector, want some selected")
				}
				return
			}
			if sel.Matches(east) != tc.east || sel.Matches(west) != tc.west {
				t.Fatalf("%s: east %v west %v", sel, sel.Matches(east), sel.Matches(west))
			}
		})
	}
}
