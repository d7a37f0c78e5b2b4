package mcosim

import (
	"context"
	"fmt"
	"slices"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/mcrender"
)

// renderPool plays MCO's render controller for one pool: it renders the
// selected MachineConfigs, creates the rendered MC if new, and points
// pool.spec.configuration at it.
func (s *Sim) renderPool(ctx context.Context, pool *mcfgv1.MachineConfigPool) error {
	sel, err := metav1.LabelSelectorAsSelector(pool.Spec.MachineConfigSelector)
	if err != nil || sel.Empty() {
		return fmt.Errorf("spec.machineConfigSelector: %v", err)
	}
	mcs := &mcfgv1.MachineConfigList{}
	if err := s.o.Client.List(ctx, mcs, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return err
	}
	// A rendered config carries no role label, so the selector leaves it
	// out as it does in MCO; one owned by a pool is skipped in case a test
	// labels it. The generated-by annotation does not tell them apart: MCO's
	// template MCs (00-worker, 01-worker-kubelet) carry it and are inputs.
	var inputs []mcfgv1.MachineConfig
	for _, mc := range mcs.Items {
		if !ownedByPool(&mc) {
			inputs = append(inputs, mc)
		}
	}
	out, err := s.o.Renderer.Render(ctx, pool, inputs)
	if err != nil {
		return err
	}
	out.Annotations = mergeMaps(out.Annotations, map[string]string{generatedByAnnot: "mcosim"})
	out.ResourceVersion = ""
	if err := s.o.Client.Create(ctx, out); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating rendered MachineConfig %s: %w", out.Name, err)
	}
	if pool.Spec.Configuration.Name == out.Name {
		return nil
	}
	base := pool.DeepCopy()
	pool.Spec.Configuration.Name = out.Name
	pool.Spec.Configuration.Source = nil
	for _, mc := range inputs {
		pool.Spec.Configuration.Source = append(pool.Spec.Configuration.Source,
			corev1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: mc.Name})
	}
	return s.o.Client.Patch(ctx, pool, client.MergeFrom(base))
}

// generatedByAnnot is the annotation MCO's controllers put on what they
// generate, rendered configs included.
const generatedByAnnot = "machineconfiguration.openshift.io/generated-by-controller-version"

func ownedByPool(mc *mcfgv1.MachineConfig) bool {
	for _, o := range mc.OwnerReferences {
		if o.Kind == "MachineConfigPool" {
			return true
		}
	}
	return false
}

func nodeSelector(pool *mcfgv1.MachineConfigPool) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(pool.Spec.NodeSelector)
	if err != nil {
		return nil, fmt.Errorf("spec.nodeSelector: %w", err)
	}
	if sel.Empty() {
		return nil, fmt.Errorf("spec.nodeSelector is empty")
	}
	return sel, nil
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

// KilnRenderer renders with kiln's pkg/render as MCO does (AsMCO): MCO
// does not know kiln's kiln.dev/managed label, so kiln's own osImageURL
// MachineConfig is merged like any other, and remote sources are left to
// the node's Ignition.
//
// A pool annotated mcosim.kiln.dev/render-quirk=<quirk> is rendered with
// that quirk, a stand-in for an MCO release that merges one field
// differently from the rules kiln knows (the drift gate's tests):
//
//   - sort-kernel-arguments: spec.kernelArguments sorted after the merge
//     (MCO concatenates them in merge order).
type KilnRenderer struct {
	Defaults mcrender.Defaults
}

// RenderQuirkAnnotation switches a render quirk on for one pool.
const RenderQuirkAnnotation = "mcosim.kiln.dev/render-quirk"

// QuirkSortKernelArguments sorts the merged kernel arguments.
const QuirkSortKernelArguments = "sort-kernel-arguments"

// Render renders the pool's configs.
func (k KilnRenderer) Render(ctx context.Context, pool *mcfgv1.MachineConfigPool, configs []mcfgv1.MachineConfig) (*mcfgv1.MachineConfig, error) {
	in := make([]*mcfgv1.MachineConfig, len(configs))
	for i := range configs {
		in[i] = &configs[i]
	}
	res, err := mcrender.Render(ctx, mcrender.Request{Pool: pool, Configs: in, Defaults: k.Defaults, AsMCO: true})
	if err != nil {
		return nil, err
	}
	return applyQuirk(pool, res.Config)
}

// applyQuirk changes the rendered spec as the pool's quirk says and names
// it by MCO's rule over the changed spec.
func applyQuirk(pool *mcfgv1.MachineConfigPool, mc *mcfgv1.MachineConfig) (*mcfgv1.MachineConfig, error) {
	switch q := pool.Annotations[RenderQuirkAnnotation]; q {
	case "":
		return mc, nil
	case QuirkSortKernelArguments:
		slices.Sort(mc.Spec.KernelArguments)
	default:
		return nil, fmt.Errorf("MachineConfigPool %s: annotation %s: unknown quirk %q", pool.Name, RenderQuirkAnnotation, q)
	}
	name, err := mcrender.RenderedName(pool.Name, mc.Spec)
	if err != nil {
		return nil, err
	}
	mc.Name = name
	return mc, nil
}
