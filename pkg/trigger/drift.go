package trigger

import (
	"context"
	"fmt"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/rollout"
)

// AnnotDriftCounted marks a finished run whose drift the trigger counted
// in kiln_rollout_drift_total, so a restart or another leader never counts
// it twice.
const AnnotDriftCounted = "kiln.dev/drift-counted"

// Run results the trigger reads (pipelines/node-image.yaml).
const (
	resultRolloutState = "ROLLOUT_STATE"
	resultDriftGate    = "DRIFT_GATE"
)

// drifted reports whether a finished run's drift gate saw MCO render
// another config than kiln predicted (enforce: DriftDetected; warn: Drift).
func drifted(r *pipelinev1.PipelineRun) bool {
	for _, res := range r.Status.Results {
		switch {
		case res.Name == resultRolloutState && res.Value.StringVal == rollout.StateDriftDetected,
			res.Name == resultDriftGate && res.Value.StringVal == rollout.GateDrift:
			return true
		}
	}
	return false
}

// countDrift counts each finished run with a drift once. kiln-steps rollout
// is a short-lived pod with no /metrics endpoint; the trigger, which
// watches the runs, is where the counter lives. The run is marked first
// (with its resourceVersion, so a concurrent marker loses) and counted
// only once marked.
func (c *Controller) countDrift(ctx context.Context, pool string, runs []*pipelinev1.PipelineRun) error {
	for _, r := range runs {
		if stateOf(r) != runDone || r.Annotations[AnnotDriftCounted] != "" || !drifted(r) {
			continue
		}
		base := r.DeepCopy()
		if r.Annotations == nil {
			r.Annotations = map[string]string{}
		}
		r.Annotations[AnnotDriftCounted] = "true"
		err := c.Client.Patch(ctx, r, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		if !apierrors.IsConflict(err) { // a conflict wrote nothing
			c.writes.note(r, false, err)
		}
		switch {
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			continue // the next reconcile sees the run as it is now
		case err != nil:
			return fmt.Errorf("marking PipelineRun %s as counted: %w", r.Name, err)
		}
		metricDrift.WithLabelValues(pool).Inc()
	}
	return nil
}
