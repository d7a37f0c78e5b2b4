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
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
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

// finish records the outcome of a pass: "x of y" reconciled, and each
// failed MachineSet in BootImageUpdateDegraded, worded as MCO words it
// (pkg/controller/bootimage/boot_image_controller.go
// getDegradedStatusMessage, updateConditions, syncMAPIMachineSets):
// "<e> Degraded MAPI MachineSets | <e> Degraded CAPI MachineSets", then
// " | Error(s): " and the errors as apimachinery's aggregate prints them,
// one "error syncing MAPI MachineSet <name>: <reason>" each. MCO's
// messages also carry ControlPlaneMachineSets and CAPI MachineDeployments,
// which kiln does not handle. clusterErr is a failure of the whole pass
// (opt-in, ConfigMap, stability).
func (s *status) finish(r *Report, clusterErr error) *status {
	done := len(r.Patched) + len(r.UpToDate) + len(r.Skipped)
	progMsg := fmt.Sprintf("Reconciled %d of %d MAPI MachineSets (%d patched, %d up to date, %d skipped)",
		done, s.total, len(r.Patched), len(r.UpToDate), len(r.Skipped))
	var errs []error
	for _, e := range r.Errors {
		errs = append(errs, fmt.Errorf("error syncing MAPI MachineSet %s: %s", e.Name, e.Reason))
	}
	capi := &CAPIReport{}
	if r.CAPI != nil {
		capi = r.CAPI
		// Beyond MCO's MAPI-only progress: the Cluster API MachineSets too.
		progMsg += fmt.Sprintf("; Reconciled %d of %d CAPI MachineSets (%d patched, %d up to date, %d skipped)",
			len(capi.Patched)+len(capi.UpToDate)+len(capi.Skipped), capi.Enrolled, len(capi.Patched), len(capi.UpToDate), len(capi.Skipped))
	}
	for _, e := range capi.Errors {
		errs = append(errs, fmt.Errorf("error syncing CAPI MachineSet %s: %s", e.Name, e.Reason))
	}
	if clusterErr != nil {
		errs = append(errs, clusterErr)
	}
	degMsg := fmt.Sprintf("%d Degraded MAPI MachineSets | %d Degraded CAPI MachineSets", len(r.Errors), len(capi.Errors))
	prog := metav1.Condition{Type: ConditionProgressing, Status: metav1.ConditionFalse, Reason: reasonReconciled, Message: progMsg}
	deg := metav1.Condition{Type: ConditionDegraded, Status: metav1.ConditionFalse, Reason: reasonReconciled, Message: degMsg}
	if agg := utilerrors.NewAggregate(errs); agg != nil {
		deg.Status, deg.Reason = metav1.ConditionTrue, reasonFailed
		deg.Message = fmt.Sprintf("%s | Error(s): %s", degMsg, truncate(agg.Error(), maxErrorsMessage))
	}
	s.conditions = []metav1.Condition{prog, deg}
	return s
}

// maxErrorsMessage bounds the errors in the Degraded message (the API
// allows 32768 bytes per condition message; MCO does not bound it).
const maxErrorsMessage = 16384

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
