package moduleday0

import (
	"context"
	"errors"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
)

// applyImages implements the KMM day-0 proposal's "Modifying day-0 kmods": when the
// nodes of a ModuleDay0's pool do not all report osMapping.literal as
// their OS, the kmm-managed MachineConfig's osImageURL becomes
// osMapping.containerImage — but only once that image exists, so a node is
// never pointed at an image still to be built or signed. A conflicting
// ModuleDay0 changes nothing.
func (s *Sync) applyImages(ctx context.Context, st *state) error {
	var errs []error
	for i := range st.modules {
		md := &st.modules[i]
		if c := findCondition(md, kmmv1beta1.ConditionSynced); c == nil || c.Status != metav1.ConditionTrue {
			continue
		}
		pools := poolsOf(md, st.pools)
		nodes, onOS := poolNodes(pools, st.nodes, md.Spec.OSMapping.Literal)
		cond := metav1.Condition{Type: kmmv1beta1.ConditionApplied, Status: metav1.ConditionTrue, Reason: ReasonApplied,
			Message: fmt.Sprintf("%d of %d nodes run %q", onOS, nodes, md.Spec.OSMapping.Literal)}
		if md.Spec.OSMapping.Literal == "" || onOS < nodes {
			c, err := s.pointMC(ctx, md, st)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			cond = c
			cond.Message = fmt.Sprintf("%s; %d of %d nodes run %q", c.Message, onOS, nodes, md.Spec.OSMapping.Literal)
		}
		errs = append(errs, s.setCondition(ctx, md, cond))
	}
	return errors.Join(errs...)
}

// pointMC sets the source MC's osImageURL to the ModuleDay0's image when
// the image exists.
func (s *Sync) pointMC(ctx context.Context, md *kmmv1beta1.ModuleDay0, st *state) (metav1.Condition, error) {
	img := md.Spec.OSMapping.ContainerImage
	mc := sourceMC(md, st.mcs)
	if mc == nil {
		return metav1.Condition{Type: kmmv1beta1.ConditionApplied, Status: metav1.ConditionFalse, Reason: "NoMachineConfig",
			Message: "no kmm-managed MachineConfig for this ModuleDay0"}, nil
	}
	if mc.Spec.OSImageURL == img {
		return metav1.Condition{Type: kmmv1beta1.ConditionApplied, Status: metav1.ConditionFalse, Reason: ReasonNodesBehind,
			Message: fmt.Sprintf("MachineConfig %s names %s; waiting for the nodes", mc.Name, img)}, nil
	}
	if s.Exists == nil {
		return metav1.Condition{}, errors.New("no image checker configured")
	}
	ok, err := s.Exists(ctx, img)
	if err != nil {
		return metav1.Condition{}, fmt.Errorf("ModuleDay0 %s/%s: checking spec.osMapping.containerImage %s: %w", md.Namespace, md.Name, img, err)
	}
	if !ok {
		st.waitingForImage = true
		return metav1.Condition{Type: kmmv1beta1.ConditionApplied, Status: metav1.ConditionFalse, Reason: ReasonImageAbsent,
			Message: fmt.Sprintf("spec.osMapping.containerImage %s does not exist yet; MachineConfig %s is left alone", img, mc.Name)}, nil
	}
	base := mc.DeepCopy()
	mc.Spec.OSImageURL = img
	if err := s.Client.Patch(ctx, mc, client.MergeFrom(base)); err != nil {
		return metav1.Condition{}, fmt.Errorf("setting osImageURL of MachineConfig %s: %w", mc.Name, err)
	}
	if s.Recorder != nil {
		s.Recorder.Eventf(md, corev1.EventTypeNormal, "OSImageURLSet", "MachineConfig %s osImageURL set to %s", mc.Name, img)
	}
	return metav1.Condition{Type: kmmv1beta1.ConditionApplied, Status: metav1.ConditionFalse, Reason: ReasonNodesBehind,
		Message: fmt.Sprintf("MachineConfig %s osImageURL set to %s", mc.Name, img)}, nil
}

func sourceMC(md *kmmv1beta1.ModuleDay0, mcs []mcfgv1.MachineConfig) *mcfgv1.MachineConfig {
	name := md.Labels[SourceMCLabel]
	for i := range mcs {
		if mcs[i].Name == name && mcs[i].Labels[KMMManagedLabel] == "true" {
			return &mcs[i]
		}
	}
	return nil
}

// poolNodes counts the pools' nodes and those reporting the literal OS.
func poolNodes(pools []*mcfgv1.MachineConfigPool, nodes []corev1.Node, literal string) (total, onOS int) {
	for i := range nodes {
		for _, p := range pools {
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector)
			if err != nil || !sel.Matches(labels.Set(nodes[i].Labels)) {
				continue
			}
			total++
			if literal != "" && nodes[i].Status.NodeInfo.OSImage == literal {
				onOS++
			}
			break
		}
	}
	return total, onOS
}

func findCondition(md *kmmv1beta1.ModuleDay0, t string) *metav1.Condition {
	for i := range md.Status.Conditions {
		if md.Status.Conditions[i].Type == t {
			return &md.Status.Conditions[i]
		}
	}
	return nil
}
