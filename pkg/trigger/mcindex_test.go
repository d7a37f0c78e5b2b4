package trigger

import (
	"context"
	"slices"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kiln-dev/kiln/pkg/mcrender"
)

// TestSelectByIndexMatchesSelector: for each selector shape a pool may
// carry, the MCs found through the label index of the manager's cache are
// exactly those the apiserver's label selector returns, before and after
// an MC moves to another role; shapes the index cannot narrow still give
// the same MCs by a full scan.
func TestSelectByIndexMatchesSelector(t *testing.T) {
	h := newHarness(t)
	const tier = "example.com/tier"
	mc := func(name string, lbls map[string]string) *mcfgv1.MachineConfig {
		m := machineConfig(name, "", "k=v")
		m.Labels = lbls
		return m
	}
	h.create(
		mc("00-worker", map[string]string{mcrender.RoleLabel: "worker"}),
		mc("10-a-1", map[string]string{mcrender.RoleLabel: "a"}),
		mc("10-a-2", map[string]string{mcrender.RoleLabel: "a"}),
		mc("10-a-gold", map[string]string{mcrender.RoleLabel: "a", tier: "gold"}),
		mc("20-b-silver", map[string]string{mcrender.RoleLabel: "b", tier: "silver"}),
		mc("20-b-gold", map[string]string{mcrender.RoleLabel: "b", tier: "gold"}),
		mc("30-gold", map[string]string{tier: "gold"}),
	)
	mgr, err := ctrl.NewManager(h.kube.Config, ctrl.Options{Scheme: h.kube.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := indexMachineConfigs(context.Background(), mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}

	in := func(key string, vals ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: vals}
	}
	cases := []struct {
		name    string
		sel     metav1.LabelSelector
		indexed bool
		want    []string // before the move
	}{
		{"matchLabels on the role", metav1.LabelSelector{MatchLabels: map[string]string{mcrender.RoleLabel: "a"}},
			true, []string{"10-a-1", "10-a-2", "10-a-gold"}},
		{"role In two values", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{in(mcrender.RoleLabel, "worker", "b")}},
			true, []string{"00-worker", "20-b-gold", "20-b-silver"}},
		{"matchLabels on another label", metav1.LabelSelector{MatchLabels: map[string]string{tier: "gold"}},
			true, []string{"10-a-gold", "20-b-gold", "30-gold"}},
		{"role In and tier NotIn", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			in(mcrender.RoleLabel, "a", "b"), {Key: tier, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"gold"}}}},
			true, []string{"10-a-1", "10-a-2", "20-b-silver"}},
		{"Exists only", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: tier, Operator: metav1.LabelSelectorOpExists}}},
			false, []string{"10-a-gold", "20-b-gold", "20-b-silver", "30-gold"}},
		{"empty", metav1.LabelSelector{}, false, nil},
	}
	// check compares the index path with the apiserver for every case;
	// with report false it only says whether they agree.
	check := func(report bool) bool {
		same := true
		for _, tc := range cases {
			p := &mcfgv1.MachineConfigPool{Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: &tc.sel}}
			sel, err := selectorOf(p)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := indexKeys(sel); ok != tc.indexed {
				t.Errorf("%s: served by the index %v, want %v", tc.name, ok, tc.indexed)
			}
			got, err := listMachineConfigs(ctx, mgr.GetCache(), sel, true)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if len(tc.sel.MatchLabels)+len(tc.sel.MatchExpressions) == 0 {
				continue // the apiserver reads it as everything, MCO as nothing
			}
			var live mcfgv1.MachineConfigList
			if err := h.c.List(ctx, &live, client.MatchingLabelsSelector{Selector: sel}); err != nil {
				t.Fatal(err)
			}
			if g, w := mcNames(got), mcNames(ptrs(live.Items)); !slices.Equal(g, w) {
				same = false
				if report {
					t.Errorf("%s: the index found %v, the apiserver's selector %v", tc.name, g, w)
				}
			}
		}
		return same
	}
	for _, tc := range cases {
		p := &mcfgv1.MachineConfigPool{Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: &tc.sel}}
		sel, _ := selectorOf(p)
		got, err := listMachineConfigs(ctx, mgr.GetCache(), sel, true)
		if err != nil {
			t.Fatal(err)
		}
		if g := mcNames(got); !slices.Equal(g, tc.want) {
			t.Errorf("%s: found %v, want %v", tc.name, g, tc.want)
		}
	}
	check(true)

	// Moving an MC to another role must move it in the index too.
	h.update(&mcfgv1.MachineConfig{}, "10-a-gold", "", func(o client.Object) { o.GetLabels()[mcrender.RoleLabel] = "b" })
	eventually(t, 30*time.Second, "the index to agree with the apiserver after the move", func() bool { return check(false) })
	check(true)
	sel, _ := selectorOf(&mcfgv1.MachineConfigPool{Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: &cases[0].sel}})
	got, err := listMachineConfigs(ctx, mgr.GetCache(), sel, true)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := mcNames(got), []string{"10-a-1", "10-a-2"}; !slices.Equal(g, w) {
		t.Errorf("role a after 10-a-gold moved to b: found %v, want %v", g, w)
	}
}

func mcNames(mcs []*mcfgv1.MachineConfig) []string {
	var out []string
	for _, m := range mcs {
		out = append(out, m.Name)
	}
	slices.Sort(out)
	return out
}

func ptrs(items []mcfgv1.MachineConfig) []*mcfgv1.MachineConfig {
	out := make([]*mcfgv1.MachineConfig, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
