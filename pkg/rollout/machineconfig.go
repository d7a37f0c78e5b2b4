package rollout

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/mcrender"
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

// MachineConfigName is the MachineConfig kiln writes for a pool
// (mcrender.OSImageConfigName: the prediction merges the same object).
func MachineConfigName(pool string) string { return mcrender.OSImageConfigName(pool) }

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
	want, err := desiredMC(pool, image, previousImageNoneVal)
	if err != nil {
		return applyResult{}, err
	}
	name := want.Name
	mc := &mcfgv1.MachineConfig{}
	err = c.Get(ctx, client.ObjectKey{Name: name}, mc)
	switch {
	case apierrors.IsNotFound(err):
		mc = want
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
	want.Annotations[PreviousImageAnnot] = mc.Spec.OSImageURL
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

// desiredMC is render's OSImageConfig (what MCO merges, and what the
// drift gate's prediction merged) with kiln's bookkeeping annotations,
// which MCO's merge does not read.
func desiredMC(pool *mcfgv1.MachineConfigPool, image, previous string) (*mcfgv1.MachineConfig, error) {
	mc, err := mcrender.OSImageConfig(pool, image)
	if err != nil {
		return nil, err
	}
	mc.TypeMeta = metav1.TypeMeta{}
	mc.Annotations = map[string]string{RolloutImageAnnot: image}
	if previous != "" {
		mc.Annotations[PreviousImageAnnot] = previous
	}
	return mc, nil
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
