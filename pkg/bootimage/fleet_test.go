package bootimage

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// staleFleet is a namespace of GCP MachineSets, every tenth of which the
// reference step makes stale again after a pass brought it up to date.
type staleFleet struct {
	tc     *testCluster
	total  int
	revert []byte // merge patch: the up-to-date providerSpec back to the stale one
}

func (f *staleFleet) name(i int) string { return fmt.Sprintf("worker-%04d", i) }

func (f *staleFleet) stale() int { return (f.total + 9) / 10 }

// newFleet creates total up-to-date MachineSets and their user-data Secret
// (a spec 3 stub: no pass rewrites it).
func newFleet(t testing.TB, tc *testCluster, total int) *staleFleet {
	t.Helper()
	ctx := context.Background()
	ns := MachineAPINamespace
	tc.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "worker-user-data", Namespace: ns}, Data: map[string][]byte{UserDataKey: []byte(stubV35)}})
	fresh := machineSet(t, "x", gcpSpec(newGCP)).Spec.Template.Spec.ProviderSpec.Value.Raw
	old := machineSet(t, "x", gcpSpec(oldGCP)).Spec.Template.Spec.ProviderSpec.Value.Raw
	spec, err := jsonmergepatch.CreateThreeWayJSONMergePatch(fresh, old, fresh)
	if err != nil {
		t.Fatal(err)
	}
	revert, err := json.Marshal(map[string]any{
		// A benchmark revert is not a hot loop.
		"metadata": map[string]any{"annotations": map[string]any{HotLoopAnnotation: nil}},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"providerSpec": map[string]any{"value": json.RawMessage(spec)}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &staleFleet{tc: tc, total: total, revert: revert}
	var wg sync.WaitGroup
	errs := make(chan error, total)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < total; i += 8 {
				ms := machineSet(t, f.name(i), gcpSpec(newGCP))
				ms.Namespace = ns
				if err := tc.kube.Client.Create(ctx, ms); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// One pass outside any measure creates the histories, so that measured
	// passes are the steady state.
	f.makeStale(t)
	if rep, err := tc.reconciler(ns).Run(ctx); err != nil || len(rep.Patched) != f.stale() {
		t.Fatalf("first pass: patched %d: %v", len(rep.Patched), err)
	}
	return f
}

// makeStale is the physical floor of a pass: one list of the MachineSets
// and one merge patch of each stale one, the same size of change a pass
// makes, in the other direction. It runs on the counted client.
func (f *staleFleet) makeStale(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	list := &machinev1beta1.MachineSetList{}
	if err := f.tc.c.List(ctx, list, client.InNamespace(MachineAPINamespace)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != f.total {
		t.Fatalf("listed %d MachineSets, want %d", len(list.Items), f.total)
	}
	for i := 0; i < f.total; i += 10 {
		ms := &list.Items[i]
		if ms.Name != f.name(i) {
			t.Fatalf("list item %d is %s, want %s", i, ms.Name, f.name(i))
		}
		if err := f.tc.c.Patch(ctx, ms, client.RawPatch(types.MergePatchType, f.revert)); err != nil {
			t.Fatal(err)
		}
	}
}

// writesString prints counted writes sorted by key: "PATCH machinesets=200, …".
func writesString(w map[string]int) string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, w[k]))
	}
	return strings.Join(parts, ", ")
}
