package bootimage

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// status is what the stage writes on MachineConfiguration/cluster: the
// effective managedBootImagesStatus and the two conditions.
type status struct {
	managed    operatorv1.ManagedBootImages
	total      int
	conditions []metav1.Condition
	// automatic, when set, is the new skew enforcement record.
	automatic *operatorv1.ClusterBootImageAutomatic
}

func newStatus(mc *operatorv1.MachineConfiguration) *status {
	return &status{managed: *mc.Status.ManagedBootImagesStatus.DeepCopy()}
}

const (
	reasonReconciling = "Reconciling"
	reasonReconciled  = "Reconciled"
	reasonFailed      = "Failed"
)

// progressing marks the start of a pass: "0 of y".
func (s *status) progressing() *status {
	s.conditions = []metav1.Condition{
		{Type: ConditionProgressing, Status: metav1.ConditionTrue, Reason: reasonReconciling,
			Message: fmt.Sprintf("Reconciled 0 of %d MAPI MachineSets", s.total)},
	}
	return s
}

// finish records the outcome of a pass: "x of y" reconciled, "e of y"
// degraded with the errors. MCO's messages carry four machine kinds
// (MAPI, CPMS, CAPI MachineSets and MachineDeployments); kiln's name the
// MAPI MachineSets it handles.
func (s *status) finish(r *Report, err error) *status {
	done := len(r.Patched) + len(r.UpToDate) + len(r.Skipped)
	progMsg := fmt.Sprintf("Reconciled %d of %d MAPI MachineSets (%d patched, %d up to date, %d skipped)",
		done, s.total, len(r.Patched), len(r.UpToDate), len(r.Skipped))
	degMsg := fmt.Sprintf("%d of %d MAPI MachineSets degraded", len(r.Errors), s.total)
	if c := r.CAPI; c != nil {
		// Beyond MCO's MAPI-only messages: the Cluster API MachineSets too.
		progMsg += fmt.Sprintf("; Reconciled %d of %d CAPI MachineSets (%d patched, %d up to date, %d skipped)",
			len(c.Patched)+len(c.UpToDate)+len(c.Skipped), c.Enrolled, len(c.Patched), len(c.UpToDate), len(c.Skipped))
		degMsg += fmt.Sprintf("; %d of %d CAPI MachineSets degraded", len(c.Errors), c.Enrolled)
	}
	prog := metav1.Condition{Type: ConditionProgressing, Status: metav1.ConditionFalse, Reason: reasonReconciled, Message: progMsg}
	deg := metav1.Condition{Type: ConditionDegraded, Status: metav1.ConditionFalse, Reason: reasonReconciled, Message: degMsg}
	if err != nil {
		deg.Status, deg.Reason = metav1.ConditionTrue, reasonFailed
		deg.Message = fmt.Sprintf("%s | Error: %s", degMsg, truncate(err.Error(), 1024))
	}
	s.conditions = []metav1.Condition{prog, deg}
	return s
}

func truncate(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", "; ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// writeStatus merge-patches the status with resourceVersion, retrying on
// conflict, and makes no call when nothing changes.
func (p *pass) writeStatus(ctx context.Context, s *status) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc, err := p.Cluster.MachineConfiguration(ctx)
		if err != nil {
			return fmt.Errorf("writing MachineConfiguration status: %w", err)
		}
		conds := append([]metav1.Condition(nil), mc.Status.Conditions...)
		for _, c := range s.conditions {
			c.ObservedGeneration = mc.Generation
			meta.SetStatusCondition(&conds, c)
		}
		managed := s.managed
		if managed.MachineManagers == nil {
			managed = mc.Status.ManagedBootImagesStatus
		}
		body := map[string]any{"managedBootImagesStatus": managed, "conditions": conds}
		skewChanged := false
		if s.automatic != nil && *s.automatic != mc.Status.BootImageSkewEnforcementStatus.Automatic {
			skewChanged = true
			body["bootImageSkewEnforcementStatus"] = map[string]any{"automatic": s.automatic}
		}
		if !skewChanged && equality.Semantic.DeepEqual(conds, mc.Status.Conditions) && equality.Semantic.DeepEqual(managed, mc.Status.ManagedBootImagesStatus) {
			return nil
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": mc.ResourceVersion},
			"status":   body,
		})
		if err != nil {
			return err
		}
		if err := p.Cluster.PatchMachineConfigurationStatus(ctx, mc, patch); err != nil {
			return fmt.Errorf("writing MachineConfiguration/%s status: %w", mc.Name, err)
		}
		return nil
	})
}
