package rollout

import (
	"context"
	"encoding/json"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OriginalMaxUnavailableAnnot keeps the pool's own maxUnavailable while
// kiln overrides it, so a crashed run's successor can restore it.
const OriginalMaxUnavailableAnnot = "kiln.dev/original-max-unavailable"

const unsetMarker = "unset"

// overrideMaxUnavailable sets the pool's maxUnavailable, remembering the
// original in an annotation unless one is already remembered (a resumed run
// must not remember its own override as the original).
func overrideMaxUnavailable(ctx context.Context, c client.Client, pool *mcfgv1.MachineConfigPool, v intstr.IntOrString) error {
	patch := client.MergeFrom(pool.DeepCopy())
	if _, ok := pool.Annotations[OriginalMaxUnavailableAnnot]; !ok {
		orig := unsetMarker
		if pool.Spec.MaxUnavailable != nil {
			b, _ := json.Marshal(pool.Spec.MaxUnavailable)
			orig = string(b)
		}
		pool.Annotations = mergeMaps(pool.Annotations, map[string]string{OriginalMaxUnavailableAnnot: orig})
	}
	pool.Spec.MaxUnavailable = &v
	if err := c.Patch(ctx, pool, patch); err != nil {
		return fmt.Errorf("setting maxUnavailable %s on MachineConfigPool %s: %w", v.String(), pool.Name, err)
	}
	return nil
}

// restoreMaxUnavailable puts back the remembered maxUnavailable, if any.
func restoreMaxUnavailable(ctx context.Context, c client.Client, name string) error {
	pool := &mcfgv1.MachineConfigPool{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, pool); err != nil {
		return fmt.Errorf("reading MachineConfigPool %s: %w", name, err)
	}
	orig, ok := pool.Annotations[OriginalMaxUnavailableAnnot]
	if !ok {
		return nil
	}
	base := pool.DeepCopy()
	pool.Spec.MaxUnavailable = nil
	if orig != unsetMarker {
		v := &intstr.IntOrString{}
		if err := json.Unmarshal([]byte(orig), v); err != nil {
			return fmt.Errorf("MachineConfigPool %s: annotation %s=%q: %w", name, OriginalMaxUnavailableAnnot, orig, err)
		}
		pool.Spec.MaxUnavailable = v
	}
	delete(pool.Annotations, OriginalMaxUnavailableAnnot)
	// A merge patch cannot remove a field by omission: a strategic-less
	// JSON merge patch needs an explicit null, which MergeFrom produces.
	if err := c.Patch(ctx, pool, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("restoring maxUnavailable on MachineConfigPool %s: %w", name, err)
	}
	return nil
}

// setPaused pauses or unpauses the pool.
func setPaused(ctx context.Context, c client.Client, name string, paused bool) error {
	pool := &mcfgv1.MachineConfigPool{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, pool); err != nil {
		return fmt.Errorf("reading MachineConfigPool %s: %w", name, err)
	}
	if pool.Spec.Paused == paused {
		return nil
	}
	base := pool.DeepCopy()
	pool.Spec.Paused = paused
	if err := c.Patch(ctx, pool, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("setting paused=%v on MachineConfigPool %s: %w", paused, name, err)
	}
	return nil
}
