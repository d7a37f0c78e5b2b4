package mcrender

import (
	"fmt"
	"slices"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// emptyIgnition is the config of kiln's osImageURL MachineConfig: MCO's
// parser rejects an MC without one.
const emptyIgnition = `{"ignition":{"version":"3.5.0"}}`

// OSImageConfigName is the MachineConfig kiln writes for a pool. The 99-
// prefix sorts it after every other MC of the role, so its osImageURL wins
// MCO's last-non-empty rule.
func OSImageConfigName(pool string) string { return "99-kiln-" + pool + "-os-image" }

// OSImageConfig is kiln's osImageURL MachineConfig for pool and image as
// MCO merges it: name, role and kiln labels, and spec. Rollout writes it
// (adding its own bookkeeping annotations, which MCO's merge ignores) and
// the drift gate's prediction merges it, so both use this one definition.
func OSImageConfig(pool *mcfgv1.MachineConfigPool, image string) (*mcfgv1.MachineConfig, error) {
	role, err := RoleOf(pool)
	if err != nil {
		return nil, err
	}
	return &mcfgv1.MachineConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfig"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   OSImageConfigName(pool.Name),
			Labels: map[string]string{RoleLabel: role, ManagedLabel: "true", PoolLabel: pool.Name},
		},
		Spec: mcfgv1.MachineConfigSpec{
			Config:     runtime.RawExtension{Raw: []byte(emptyIgnition)},
			OSImageURL: image,
		},
	}, nil
}

// RoleOf returns the role label value the pool selects MCs by; kiln's MC
// must carry it or MCO would not merge it into the pool.
func RoleOf(pool *mcfgv1.MachineConfigPool) (string, error) {
	sel := pool.Spec.MachineConfigSelector
	if sel != nil {
		if role, ok := sel.MatchLabels[RoleLabel]; ok && role != "" {
			return role, nil
		}
		for _, e := range sel.MatchExpressions {
			if e.Key == RoleLabel && e.Operator == metav1.LabelSelectorOpIn && len(e.Values) > 0 {
				// A custom pool selecting [worker, infra] is served by its own name.
				if slices.Contains(e.Values, pool.Name) {
					return pool.Name, nil
				}
				return e.Values[len(e.Values)-1], nil
			}
		}
	}
	return "", fmt.Errorf("MachineConfigPool %s: spec.machineConfigSelector has no %s label to give kiln's MachineConfig", pool.Name, RoleLabel)
}
