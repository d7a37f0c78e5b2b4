package trigger

import (
	"context"
	"fmt"
	"sort"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// wavesAllow reports whether pool may start a run now: every enabled pool
// of a lower kiln.dev/wave must have a succeeded run on the same payload.
// A run that failed on that payload holds the later waves, which is the
// point of a canary.
func (c *Controller) wavesAllow(ctx context.Context, pool *mcfgv1.MachineConfigPool, w *world) (bool, error) {
	wave, ok, err := waveOf(pool)
	if err != nil || !ok || wave == 0 {
		return err == nil, err
	}
	var pools mcfgv1.MachineConfigPoolList
	if err := c.Client.List(ctx, &pools, client.MatchingLabels{LabelEnabled: "true"}); err != nil {
		return false, err
	}
	// From the cache: a success it has not seen yet only holds the pool
	// until that run's event, which enqueues every pool of a wave.
	var runs pipelinev1.PipelineRunList
	if err := c.Client.List(ctx, &runs, client.InNamespace(c.Namespace),
		client.MatchingLabels{LabelRunsManagedBy: ManagedBy, LabelPipeline: pipelineNodeImage}); err != nil {
		return false, fmt.Errorf("listing PipelineRuns: %w", err)
	}
	done := map[string]bool{} // pools with a succeeded run on this payload
	for i := range runs.Items {
		r := &runs.Items[i]
		if succeeded(r) && decodeParts(r.Annotations[AnnotParts])[PartPayload] == w.fp.Parts[PartPayload] {
			done[r.Labels[LabelPool]] = true
		}
	}
	var waiting []string
	for i := range pools.Items {
		p := &pools.Items[i]
		pw, has, err := waveOf(p)
		if err != nil {
			return false, err
		}
		if has && pw < wave && !done[p.Name] {
			waiting = append(waiting, fmt.Sprintf("%s (wave %d)", p.Name, pw))
		}
	}
	if len(waiting) == 0 {
		return true, nil
	}
	sort.Strings(waiting)
	c.Recorder.Eventf(pool, corev1.EventTypeNormal, ReasonWaitingWave, "wave %d waits for %s to succeed on this payload", wave, strings.Join(waiting, ", "))
	return false, nil
}
