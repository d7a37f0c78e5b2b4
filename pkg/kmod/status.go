package kmod

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/step"
)

// Reasons of the Built condition the kmod stages set.
const (
	ReasonBuilt  = "Built"
	ReasonSigned = "Signed"
)

// recordBuilt tells the ModuleDay0 what was built or signed: the Built
// condition and status.imageDigest, written through the step's client
// (newClient): on the cluster, the live object's status; from a folder,
// the folder's ModuleDay0 with that status as a file under
// work/kmod/manifests/ (folder says why). The step already pushed, so a
// ModuleDay0 that is gone is reported, not an error.
func recordBuilt(ctx context.Context, c client.Client, md *kmmv1beta1.ModuleDay0, reason, msg, digest string, p *step.Progress) error {
	live := &kmmv1beta1.ModuleDay0{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(md), live); err != nil {
		if apierrors.IsNotFound(err) {
			p.Printf("ModuleDay0 %s/%s is not in the cluster; its status is not updated", md.Namespace, md.Name)
			return nil
		}
		return fmt.Errorf("reading ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	meta.SetStatusCondition(&live.Status.Conditions, metav1.Condition{
		Type: kmmv1beta1.ConditionBuilt, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: live.Generation,
	})
	live.Status.ImageDigest = digest
	if err := c.Status().Update(ctx, live); err != nil {
		return fmt.Errorf("updating the status of ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	return nil
}
