package mcrender

import (
	"fmt"
	"sort"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kiln-dev/kiln/pkg/manifests"
	"github.com/kiln-dev/kiln/pkg/mcsize"
)

// Labels and annotations render reads or writes.
const (
	// RoleLabel is MCO's role label; worker-role MCs merge first.
	RoleLabel = "machineconfiguration.openshift.io/role"
	// ManagedLabel marks kiln's own osImageURL MachineConfig. Render skips it,
	// or a rollout would trigger a new render of itself.
	ManagedLabel = "kiln.dev/managed"
	// GeneratedByAnnotation marks MCs MCO's controllers generate; they never
	// override osImageURL (MCO's rule).
	GeneratedByAnnotation = mcsize.GeneratedByAnnotation
	// ReleaseVersionAnnotation carries the payload's release version.
	ReleaseVersionAnnotation = mcsize.ReleaseVersionAnnotation
	// OverriddenAnnotation is set when osImageURL differs from the payload's.
	OverriddenAnnotation = mcsize.OverriddenAnnotation
	// InputsAnnotation lists the input MCs in merge order, comma separated.
	InputsAnnotation = "kiln.dev/inputs"
	// PoolLabel names the pool on the rendered config.
	PoolLabel  = "kiln.dev/pool"
	workerRole = "worker"
)

// Select returns the MachineConfigs pool's machineConfigSelector matches, in
// MCO's merge order: worker-role MCs by name, then all others by name, so a
// custom pool's own MCs override worker's. MCs labelled kiln.dev/managed=true
// are left out.
//
// An empty (or absent) selector selects nothing and is an error; MCO only
// raises a SelectingAll event and renders nothing. So is a selector matching
// no MC, and a selected MC without labels.
func Select(pool *mcfgv1.MachineConfigPool, all []*mcfgv1.MachineConfig) ([]*mcfgv1.MachineConfig, error) {
	return selectConfigs(pool, all, true)
}

// SelectAsMCO is Select without kiln's one exception: MCO does not know
// kiln.dev/managed, so it merges kiln's osImageURL MachineConfigs (this
// pool's, and those of any other pool its selector matches, e.g. worker's
// for a custom pool that selects the worker role) like any other MC. The
// drift gate's prediction and test/mcosim select this way.
func SelectAsMCO(pool *mcfgv1.MachineConfigPool, all []*mcfgv1.MachineConfig) ([]*mcfgv1.MachineConfig, error) {
	return selectConfigs(pool, all, false)
}

func selectConfigs(pool *mcfgv1.MachineConfigPool, all []*mcfgv1.MachineConfig, skipManaged bool) ([]*mcfgv1.MachineConfig, error) {
	sel := pool.Spec.MachineConfigSelector
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return nil, fmt.Errorf("MachineConfigPool %q: spec.machineConfigSelector is empty: it selects no MachineConfig", pool.Name)
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("MachineConfigPool %q: spec.machineConfigSelector: %w", pool.Name, err)
	}
	var workers, others []*mcfgv1.MachineConfig
	for _, mc := range all {
		if !selector.Matches(labels.Set(mc.Labels)) {
			continue
		}
		if len(mc.Labels) == 0 {
			return nil, fmt.Errorf("MachineConfig %q: metadata.labels is empty: every MachineConfig needs a role label", mc.Name)
		}
		// kiln's own osImageURL MC must be left out, or a rollout would
		// trigger itself; a value like "True" is refused, not guessed.
		managed, _, err := manifests.BoolLabel("MachineConfig", mc, ManagedLabel)
		if err != nil {
			return nil, err
		}
		if managed && skipManaged {
			continue
		}
		if mc.Labels[RoleLabel] == workerRole {
			workers = append(workers, mc)
		} else {
			others = append(others, mc)
		}
	}
	if len(workers)+len(others) == 0 {
		return nil, fmt.Errorf("MachineConfigPool %q: spec.machineConfigSelector %q matches no MachineConfig", pool.Name, selector.String())
	}
	byName := func(s []*mcfgv1.MachineConfig) {
		sort.SliceStable(s, func(i, j int) bool { return s[i].Name < s[j].Name })
	}
	byName(workers)
	byName(others)
	return append(workers, others...), nil
}
