// Package rollout rolls a verified image out to one MachineConfigPool
// through MCO's own API (seeds 001 and 003): it writes the osImageURL
// MachineConfig, follows the pool and its MachineConfigNodes (seed 004)
// until every node runs the image, and rolls back by itself on failure.
package rollout

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels and annotations kiln puts on the MachineConfig it owns.
const (
	RoleLabel            = "machineconfiguration.openshift.io/role"
	ManagedLabel         = "kiln.dev/managed"
	PoolLabel            = "kiln.dev/pool"
	PreviousImageAnnot   = "kiln.dev/previous-image"
	RolloutImageAnnot    = "kiln.dev/image"
	previousImageNoneVal = "" // the MC did not exist before: roll back by deleting it
)

// MachineConfigName is the MachineConfig kiln writes for a pool. The 99-
// prefix sorts it after every other MC of the role, so its osImageURL wins
// MCO's last-non-empty rule.
func MachineConfigName(pool string) string { return "99-kiln-" + pool + "-os-image" }

// roleOf returns the role label value the pool selects MCs by; kiln's MC
// must carry it or MCO would not merge it into the pool.
func roleOf(pool *mcfgv1.MachineConfigPool) (string, error) {
	sel := pool.Spec.MachineConfigSelector
	if sel != nil {
		if role, ok := sel.MatchLabels[RoleLabel]; ok && role != "" {
			return role, nil
		}
		for _, e := range sel.MatchExpressions {
			if e.Key == RoleLabel && e.Operator == metav1.LabelSelectorOpIn && len(e.Values) > 0 {
				// A custom pool selecting [worker, infra] is served by its own name.
				for _, v := range e.Values {
					if v == pool.Name {
						return v, nil
					}
				}
				return e.Values[len(e.Values)-1], nil
			}
		}
	}
	return "", fmt.Errorf("MachineConfigPool %s: spec.machineConfigSelector has no %s label to give kiln's MachineConfig", pool.Name, RoleLabel)
}

// applyResult says what applyImage did.
type applyResult struct {
	// Previous is the osImageURL kiln's MC had before ("" if it did not exist).
	Previous string
	// Existed reports whether kiln's MC existed before.
	Existed bool
	// Changed is false when the MC already named the image: nothing written.
	Changed bool
}

// applyImage creates or updates kiln's MachineConfig for the pool so that
// its osImageURL is image. It writes at most once, and not at all when the
// MC already has the image (a second run with the same digest is a no-op).
func applyImage(ctx context.Context, c client.Client, pool *mcfgv1.MachineConfigPool, image string) (applyResult, error) {
	role, err := roleOf(pool)
	if err != nil {
		return applyResult{}, err
	}
	name := MachineConfigName(pool.Name)
	mc := &mcfgv1.MachineConfig{}
	err = c.Get(ctx, client.ObjectKey{Name: name}, mc)
	switch {
	case apierrors.IsNotFound(err):
		mc = desiredMC(name, role, pool.Name, image, previousImageNoneVal)
		if err := c.Create(ctx, mc); err != nil {
			return applyResult{}, fmt.Errorf("creating MachineConfig %s: %w", name, err)
		}
		return applyResult{Changed: true}, nil
	case err != nil:
		return applyResult{}, fmt.Errorf("reading MachineConfig %s: %w", name, err)
	}
	res := applyResult{Existed: true, Previous: mc.Spec.OSImageURL}
	if mc.Spec.OSImageURL == image {
		return res, nil
	}
	want := desiredMC(name, role, pool.Name, image, mc.Spec.OSImageURL)
	mc.Labels, mc.Annotations = mergeMaps(mc.Labels, want.Labels), mergeMaps(mc.Annotations, want.Annotations)
	mc.Spec.OSImageURL = image
	if err := c.Update(ctx, mc); err != nil { // resourceVersion guards against a concurrent writer
		return applyResult{}, fmt.Errorf("updating MachineConfig %s: %w", name, err)
	}
	res.Changed = true
	return res, nil
}

// restore undoes applyImage: the previous osImageURL is written back, or
// the MC is deleted when kiln created it.
func restore(ctx context.Context, c client.Client, pool string, prev applyResult) error {
	name := MachineConfigName(pool)
	mc := &mcfgv1.MachineConfig{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading MachineConfig %s for rollback: %w", name, err)
	}
	if !prev.Existed {
		if err := c.Delete(ctx, mc); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting MachineConfig %s for rollback: %w", name, err)
		}
		return nil
	}
	mc.Spec.OSImageURL = prev.Previous
	mc.Annotations = mergeMaps(mc.Annotations, map[string]string{RolloutImageAnnot: prev.Previous})
	delete(mc.Annotations, PreviousImageAnnot)
	if err := c.Update(ctx, mc); err != nil {
		return fmt.Errorf("restoring osImageURL of MachineConfig %s: %w", name, err)
	}
	return nil
}

func desiredMC(name, role, pool, image, previous string) *mcfgv1.MachineConfig {
	annots := map[string]string{RolloutImageAnnot: image}
	if previous != "" {
		annots[PreviousImageAnnot] = previous
	}
	return &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				RoleLabel:    role,
				ManagedLabel: "true",
				PoolLabel:    pool,
			},
			Annotations: annots,
		},
		Spec: mcfgv1.MachineConfigSpec{
			// An empty Ignition config: MCO's parser rejects an MC without one.
			Config:     runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)},
			OSImageURL: image,
		},
	}
}

func mergeMaps(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
