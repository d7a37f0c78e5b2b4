package bootimage

import (
	"context"
	"errors"
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcfgv1alpha1 "github.com/kiln-dev/kiln/pkg/apis/machineconfiguration/v1alpha1"
)

// HistoryName names the BootImageHistory of a Machine API MachineSet, as the
// seed does: "<name>-mapi-machineset".
func HistoryName(ms *machinev1beta1.MachineSet) string { return ms.Name + "-mapi-machineset" }

// recordHistory appends one entry (release, image, ConfigMap generation) to
// the MachineSet's BootImageHistory, creating it on first use. Beyond MCO:
// MCO keeps no history (the enhancement leaves it as future work).
func (p *pass) recordHistory(ctx context.Context, ms *machinev1beta1.MachineSet, plan Plan) error {
	return p.record(ctx, ms.Namespace, HistoryName(ms), mcfgv1alpha1.MachineResourceReference{
		Name: ms.Name, Resource: "MachineSet", APIGroup: machinev1beta1.GroupName}, plan)
}

// CAPIHistoryName names the BootImageHistory of a Cluster API MachineSet:
// "<name>-capi-machineset", after the enhancement's example.
func CAPIHistoryName(name string) string { return name + "-capi-machineset" }

func (p *pass) record(ctx context.Context, ns, name string, ref mcfgv1alpha1.MachineResourceReference, plan Plan) error {
	h, err := p.Cluster.BootImageHistory(ctx, ns, name)
	var missing *NotFoundError
	switch {
	case errors.As(err, &missing):
		h = &mcfgv1alpha1.BootImageHistory{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       mcfgv1alpha1.BootImageHistorySpec{MachineResourceReference: ref},
		}
	case err != nil:
		return fmt.Errorf("recording boot image history of %s %s/%s: %w", ref.Resource, ns, ref.Name, err)
	}
	release := plan.Release
	if release == "" {
		release = p.stream.ReleaseVersion
	}
	d := append(h.Status.Details, mcfgv1alpha1.BootImageHistoryDetail{
		UpdateTime: metav1.NewTime(p.now()), BootImageVersion: release, BootImage: plan.Target,
		ConfigMapGeneration: p.stream.Generation,
	})
	if n := len(d) - mcfgv1alpha1.MaxDetails; n > 0 {
		d = d[n:]
	}
	h.Status.Details = d
	if err := p.Cluster.SaveBootImageHistory(ctx, h); err != nil {
		// %v, not %w: a conflict here must not re-run the MachineSet's patch.
		return fmt.Errorf("recording boot image history %s/%s: %v", ns, name, err)
	}
	return nil
}
