package mcosim

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/render"
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
	var inputs []mcfgv1.MachineConfig
	for _, mc := range mcs.Items {
		if _, rendered := mc.Annotations[generatedByAnnot]; !rendered {
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

// generatedByAnnot marks rendered configs, as MCO's generated-by annotation
// does, so they are not fed back into rendering.
const generatedByAnnot = "machineconfiguration.openshift.io/generated-by-controller-version"

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

// KilnRenderer renders with kiln's pkg/render, which follows MCO's rules.
// MCO does not know kiln's kiln.dev/managed label, which pkg/render uses to
// leave kiln's own osImageURL MachineConfig out of its input; the stand-in
// plays MCO, so it hides the label from pkg/render.
type KilnRenderer struct {
	Defaults render.Defaults
}

// Render renders the pool's configs.
func (k KilnRenderer) Render(ctx context.Context, pool *mcfgv1.MachineConfigPool, configs []mcfgv1.MachineConfig) (*mcfgv1.MachineConfig, error) {
	in := make([]*mcfgv1.MachineConfig, len(configs))
	for i := range configs {
		mc := configs[i].DeepCopy()
		delete(mc.Labels, managedLabel)
		in[i] = mc
	}
	res, err := render.Render(ctx, render.Request{Pool: pool, Configs: in, Defaults: k.Defaults})
	if err != nil {
		return nil, err
	}
	return res.Config, nil
}

const managedLabel = "kiln.dev/managed"
