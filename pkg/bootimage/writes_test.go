package bootimage

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
)

// TestPassWritesOnlyWhatChanged pins the writes of a pass, by verb and
// resource, on 20 MachineSets of which 2 are stale: per stale MachineSet
// its patch and its BootImageHistory entry, per pass Progressing=True
// before the first patch and the final status; nothing for the 18 up to
// date, and the shared user-data Secret read once. A pass that finds
// nothing stale writes only the status whose counts changed, and the next
// one writes nothing.
func TestPassWritesOnlyWhatChanged(t *testing.T) {
	tc := startCluster(t, configv1.GCPPlatformType)
	tc.setOptIn(t, mapi(operatorv1.All, nil))
	f := newFleet(t, tc, 20)
	r := tc.reconciler(MachineAPINamespace)
	ctx := context.Background()
	passes := []struct {
		name      string
		makeStale bool
		want      map[string]int
	}{
		{"two stale", true, map[string]int{
			"PATCH machinesets": 2, "PUT bootimagehistories": 2, "PATCH machineconfigurations/status": 2}},
		{"two stale again", true, map[string]int{
			"PATCH machinesets": 2, "PUT bootimagehistories": 2, "PATCH machineconfigurations/status": 2}},
		{"nothing stale after a patching pass", false, map[string]int{"PATCH machineconfigurations/status": 1}},
		{"nothing stale twice", false, map[string]int{}},
	}
	for _, p := range passes {
		if p.makeStale {
			f.makeStale(t)
		}
		tc.counter.reset()
		rep, err := r.Run(ctx)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		wantPatched := 0
		if p.makeStale {
			wantPatched = 2
		}
		if len(rep.Patched) != wantPatched || len(rep.UpToDate) != 20-wantPatched {
			t.Errorf("%s: patched %d, up to date %d; want %d, %d", p.name, len(rep.Patched), len(rep.UpToDate), wantPatched, 20-wantPatched)
		}
		if d := cmp.Diff(p.want, tc.counter.snapshot()); d != "" {
			t.Errorf("%s: writes (-want +got):\n%s", p.name, d)
		}
		if got := tc.counter.gets["secrets"]; got > 1 {
			t.Errorf("%s: read the user-data Secret %d times, want at most once", p.name, got)
		}
	}
}
