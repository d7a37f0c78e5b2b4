package trigger

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestPinNameIsAValidNamePerPoolReleaseAndImage(t *testing.T) {
	img := "quay.io/acme/os-worker@sha256:" + strings.Repeat("a", 64)
	other := "quay.io/acme/os-worker@sha256:" + strings.Repeat("b", 64)
	n := pinName("worker", "4.19.1", img)
	if !strings.HasPrefix(n, "kiln-worker-4.19.1-") {
		t.Errorf("pinName = %q, want kiln-worker-4.19.1-<hash>", n)
	}
	if pinName("worker", "4.19.1", other) == n || pinName("infra", "4.19.1", img) == n {
		t.Errorf("pinName does not tell images or pools apart: %q", n)
	}
	for _, rel := range []string{"4.19.1+build.7", "4.19.0-RC.1", strings.Repeat("9", 300)} {
		if errs := validation.IsDNS1123Subdomain(pinName(strings.Repeat("p.", 126)+"p", rel, img)); len(errs) > 0 {
			t.Errorf("pinName for release %.20q: %v", rel, errs)
		}
	}
}

// TestPlanPinsTouchesOnlyKilnsSetsAndEntries: a user's entry keeps its
// place, kiln's wanted set is created and listed after it, kiln's set no
// longer wanted goes unless keep holds it, and nothing is patched when the
// entries are already right.
func TestPlanPinsTouchesOnlyKilnsSetsAndEntries(t *testing.T) {
	img := "r.example/os@sha256:" + strings.Repeat("1", 64)
	old := "r.example/os@sha256:" + strings.Repeat("2", 64)
	want := []pinWant{{release: "4.19.1", image: img}}
	wantName := pinName("worker", "4.19.1", img)
	oldSet := *newPinSet(pinName("worker", "4.18.9", old), "worker", pinWant{release: "4.18.9", image: old})
	refs := func(names ...string) []mcfgv1.PinnedImageSetRef {
		out := []mcfgv1.PinnedImageSetRef{}
		for _, n := range names {
			out = append(out, mcfgv1.PinnedImageSetRef{Name: n})
		}
		return out
	}
	poolWith := func(names ...string) *mcfgv1.MachineConfigPool {
		p := pool("worker", true)
		p.Spec.PinnedImageSets = refs(names...)
		return p
	}
	never := func(*mcfgv1.PinnedImageSet) bool { return false }
	always := func(*mcfgv1.PinnedImageSet) bool { return true }
	tests := []struct {
		name        string
		pool        *mcfgv1.MachineConfigPool
		have        []mcfgv1.PinnedImageSet
		keep        func(*mcfgv1.PinnedImageSet) bool
		create, del []string
		refs        []mcfgv1.PinnedImageSetRef
		patch       bool
	}{
		{name: "new ready image beside a user's entry", pool: poolWith("user-set"), keep: never,
			create: []string{wantName}, refs: refs("user-set", wantName), patch: true},
		{name: "an old target's set goes, its entry first", pool: poolWith(oldSet.Name, "user-set"), have: []mcfgv1.PinnedImageSet{oldSet}, keep: never,
			create: []string{wantName}, del: []string{oldSet.Name}, refs: refs("user-set", wantName), patch: true},
		{name: "a set the pool is moving to stays", pool: poolWith("user-set", oldSet.Name), have: []mcfgv1.PinnedImageSet{oldSet}, keep: always,
			create: []string{wantName}, refs: refs("user-set", oldSet.Name, wantName), patch: true},
		{name: "entries already right are not patched", pool: poolWith("user-set", wantName),
			have: []mcfgv1.PinnedImageSet{*newPinSet(wantName, "worker", want[0])}, keep: never, refs: refs("user-set", wantName)},
		{name: "a gone pool's sets are deleted and none made", have: []mcfgv1.PinnedImageSet{oldSet}, keep: never, del: []string{oldSet.Name}},
	}
	names := func(ss []*mcfgv1.PinnedImageSet) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return out
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := planPins(tc.pool, "worker", want, tc.have, tc.keep)
			got := struct {
				Create, Delete []string
				Refs           []mcfgv1.PinnedImageSetRef
				Patch          bool
			}{names(p.create), names(p.delete), p.refs, p.patch}
			wantPlan := struct {
				Create, Delete []string
				Refs           []mcfgv1.PinnedImageSetRef
				Patch          bool
			}{tc.create, tc.del, tc.refs, tc.patch}
			if d := cmp.Diff(wantPlan, got); d != "" {
				t.Errorf("planPins (-want +got):\n%s", d)
			}
			for _, s := range p.create {
				if s.Labels[LabelManagedBy] != ManagedBy || s.Labels[LabelPool] != "worker" || string(s.Spec.PinnedImages[0].Name) != img {
					t.Errorf("created set %s: labels %v images %v", s.Name, s.Labels, s.Spec.PinnedImages)
				}
			}
		})
	}
}
