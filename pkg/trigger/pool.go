package trigger

import (
	"context"
	"errors"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kiln-dev/kiln/pkg/rollout"
)

// reconcilePool brings one pool's runs in line with its inputs.
func (c *Controller) reconcilePool(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	name := req.Name
	if w := c.settle.wait(name); w > 0 {
		return reconcile.Result{RequeueAfter: w}, nil
	}
	var pool mcfgv1.MachineConfigPool
	if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, &pool); err != nil {
		if apierrors.IsNotFound(err) {
			// A deleted pool's unstarted work is moot.
			if err := c.syncAhead(ctx, nil, name, nil, nil); err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{}, c.stopRuns(ctx, nil, name, "MachineConfigPool deleted")
		}
		return reconcile.Result{}, err
	}
	err := c.syncPool(ctx, &pool)
	var retry *retryAhead
	if errors.As(err, &retry) {
		return reconcile.Result{RequeueAfter: retry.after}, nil
	}
	var e *Error
	if errors.As(err, &e) {
		c.Recorder.Event(&pool, corev1.EventTypeWarning, e.Reason, e.Err.Error())
		metricErrors.WithLabelValues(e.Reason).Inc()
		if e.Reason == ReasonRegistries {
			// Fixing them enqueues no pool (they are not inputs): poll.
			return reconcile.Result{RequeueAfter: c.registriesRetry()}, nil
		}
		if e.Reason == ReasonConfig || e.Reason == ReasonInputs {
			// Bad input waits for the input to change (we watch it);
			// retrying sooner would only repeat the event.
			log.FromContext(ctx).Info("pool not triggered", "pool", name, "reason", e.Reason, "error", e.Err.Error())
			return reconcile.Result{}, nil
		}
	}
	return reconcile.Result{}, err
}

func (c *Controller) syncPool(ctx context.Context, pool *mcfgv1.MachineConfigPool) error {
	enabled, _, err := PoolLabels(pool)
	if err != nil {
		return err
	}
	if !enabled {
		if err := c.syncAhead(ctx, pool, pool.Name, nil, nil); err != nil {
			return err
		}
		return c.revert(ctx, pool)
	}
	var w world
	if err := c.loadConfig(ctx, &w); err != nil {
		return err
	}
	if err := c.loadInputs(ctx, pool, &w); err != nil {
		return err
	}
	runs, err := c.poolRuns(ctx, pool.Name)
	if err != nil {
		return fail(ReasonRuns, err)
	}
	if err := c.countDrift(ctx, pool.Name, runs); err != nil {
		return fail(ReasonRuns, err)
	}
	plan := decide(runs, w.fp.Sum)
	if err := c.applyUnlessWaiting(ctx, pool, &w, runs, plan); err != nil {
		return err
	}
	// Upgrade-ahead runs roll nothing out, so no wave holds them back.
	wants := c.aheadWants(&w)
	if len(wants) == 0 {
		return c.syncAhead(ctx, pool, pool.Name, &w, nil)
	}
	if err := skipsRollout(w.pipeline); err != nil {
		// Stop the ones there are; make none.
		if serr := c.syncAhead(ctx, pool, pool.Name, &w, nil); serr != nil {
			return serr
		}
		return fail(ReasonConfig, err)
	}
	// Only now the registry: a Pipeline that cannot run them reads nothing.
	c.readPayloads(ctx, wants)
	return c.syncAhead(ctx, pool, pool.Name, &w, wants)
}

// applyUnlessWaiting applies plan, unless it creates a run that a lower
// wave holds back.
func (c *Controller) applyUnlessWaiting(ctx context.Context, pool *mcfgv1.MachineConfigPool, w *world, runs []*pipelinev1.PipelineRun, plan plan) error {
	if plan.create {
		ok, err := c.wavesAllow(ctx, pool, w)
		if err != nil || !ok {
			return err
		}
	}
	return c.apply(ctx, pool, w, runs, plan)
}

// poolRuns lists pool's node-image runs, newest first, as the trigger
// last wrote them (listRuns).
func (c *Controller) poolRuns(ctx context.Context, pool string) ([]*pipelinev1.PipelineRun, error) {
	return c.listRuns(ctx, pool, pipelineNodeImage)
}

// plan is what decide wants done; apply does it.
type plan struct {
	// cancel maps a run to the spec.status it gets.
	cancel map[*pipelinev1.PipelineRun]pipelinev1.PipelineRunSpecStatus
	// create the desired run, pending when another run is in rollout.
	create, pending bool
	// recreate: the desired run exists but never took effect (the trigger
	// cancelled it for newer inputs, now undone) or is stale (a newer run
	// rolled out since), so it is deleted and made again. A run a user
	// cancelled or that failed is not retried: kiln.dev/rebuild asks.
	recreate *pipelinev1.PipelineRun
	// start the desired run, which waited (pending) for a rollout.
	start *pipelinev1.PipelineRun
	prev  *pipelinev1.PipelineRun
}

// decide is the pure heart of the trigger: given a pool's runs (newest
// first) and the fingerprint its inputs have now, what must happen. One
// run per fingerprint, one active run per pool; a run that reached
// rollout finishes, and the new run waits pending behind it.
func decide(runs []*pipelinev1.PipelineRun, sum string) plan {
	p := plan{cancel: map[*pipelinev1.PipelineRun]pipelinev1.PipelineRunSpecStatus{}}
	var desired *pipelinev1.PipelineRun
	blocked := false
	for _, r := range runs {
		if r.Labels[LabelFingerprint] == sum {
			if desired == nil { // the newest; older ones are history
				desired = r
			}
			continue
		}
		if p.prev == nil {
			p.prev = r
		}
		switch stateOf(r) {
		case runPending:
			p.cancel[r] = pipelinev1.PipelineRunSpecStatusCancelled
		case runActive:
			p.cancel[r] = pipelinev1.PipelineRunSpecStatusCancelledRunFinally
		case runRollout:
			blocked = true
		}
	}
	switch {
	case desired == nil:
		p.create, p.pending = true, blocked
	case stateOf(desired) == runPending && !blocked:
		p.start = desired
	case stateOf(desired) == runDone && (desired.Annotations[AnnotSupersededBy] != "" || rolledOutSince(runs, desired)):
		p.recreate, p.create, p.pending = desired, true, blocked
	}
	return p
}

// rolledOutSince: a run newer than r reached rollout, so the pool may now
// run another image than r's, and r's fingerprint must run again (e.g. an
// edit and its undo, with the edit's run already rolling out).
func rolledOutSince(runs []*pipelinev1.PipelineRun, r *pipelinev1.PipelineRun) bool {
	for _, o := range runs {
		if o == r {
			return false // runs are newest first
		}
		if reachedRollout(o) {
			return true
		}
	}
	return false
}

// apply carries out a plan: cancels first, so that one active run per
// pool holds at every moment, then the create or the start.
func (c *Controller) apply(ctx context.Context, pool *mcfgv1.MachineConfigPool, w *world, runs []*pipelinev1.PipelineRun, p plan) error {
	for _, r := range runs { // deterministic order
		st, ok := p.cancel[r]
		if !ok {
			continue
		}
		if err := c.supersede(ctx, r, st, w.fp.Sum); err != nil {
			return fail(ReasonRuns, err)
		}
		c.Recorder.Eventf(pool, corev1.EventTypeNormal, ReasonCancelled, "cancelled PipelineRun %s (%s): inputs changed to fingerprint %s", r.Name, st, w.fp.Sum)
		metricCancelled.WithLabelValues(pool.Name).Inc()
	}
	if p.start != nil {
		if err := c.setStatus(ctx, p.start, ""); err != nil {
			return fail(ReasonRuns, err)
		}
		c.Recorder.Eventf(pool, corev1.EventTypeNormal, ReasonStarted, "started PipelineRun %s: the previous run finished its rollout", p.start.Name)
		return nil
	}
	if !p.create {
		return nil
	}
	if p.recreate != nil {
		err := c.Client.Delete(ctx, p.recreate, client.Preconditions{UID: &p.recreate.UID})
		c.writes.note(p.recreate, true, err)
		if err != nil && !apierrors.IsNotFound(err) {
			return fail(ReasonRuns, fmt.Errorf("deleting stale PipelineRun %s: %w", p.recreate.Name, err))
		}
	}
	return c.create(ctx, pool, w, p)
}

func (c *Controller) create(ctx context.Context, pool *mcfgv1.MachineConfigPool, w *world, p plan) error {
	trig, changes := w.fp.Changed(nil), w.fp.Describe(nil, nil)
	switch {
	case p.prev != nil:
		parts := decodeParts(p.prev.Annotations[AnnotParts])
		trig, changes = w.fp.Changed(parts), w.fp.Describe(parts, decodeInputs(p.prev.Annotations[AnnotInputs]))
	case p.recreate != nil:
		trig, changes = TriggerManual, changesSame
	}
	spec := RunSpec{Namespace: c.Namespace, Pool: pool.Name, Fingerprint: w.fp, Trigger: trig, Changes: changes,
		Pending: p.pending, Tasks: w.tasks}
	if w.config.UpdatesBootImages(pool.Name) {
		boot, err := c.bootImagesDigest(ctx)
		if err != nil {
			return err
		}
		spec.BootImages = boot
		if boot == "" {
			spec.BootImages = "none"
		}
	}
	rebuild, why := c.kmodRebuild(ctx, pool, w)
	spec.KmodRebuild = rebuild
	var err error
	if w.config.Cluster, err = c.clusterRun(ctx, w.pipeline); err != nil {
		return err
	}
	pr := BuildRun(w.config, spec)
	if err := validateRun(ctx, pr); err != nil {
		return fail(ReasonConfig, err)
	}
	err = c.Client.Create(ctx, pr)
	c.writes.note(pr, false, err)
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // another reconcile (or our previous life) made it
		}
		return fail(ReasonRuns, fmt.Errorf("creating PipelineRun %s: %w", pr.Name, err))
	}
	metricCreated.WithLabelValues(pool.Name, trig).Inc()
	msg := fmt.Sprintf("created PipelineRun %s (trigger %s, fingerprint %s)", pr.Name, trig, w.fp.Sum)
	if why != "" {
		msg += "; kmod: " + why
	}
	if p.pending {
		c.Recorder.Event(pool, corev1.EventTypeNormal, ReasonQueued, msg+"; pending until the run in rollout finishes")
		return nil
	}
	c.Recorder.Event(pool, corev1.EventTypeNormal, ReasonCreated, msg)
	return nil
}

// setStatus patches spec.status; a merge patch with an empty value
// removes the field (starting a pending run).
func (c *Controller) setStatus(ctx context.Context, r *pipelinev1.PipelineRun, st pipelinev1.PipelineRunSpecStatus) error {
	var patch []byte
	if st == "" {
		patch = []byte(`{"spec":{"status":null}}`)
	} else {
		patch = fmt.Appendf(nil, `{"spec":{"status":%q}}`, st)
	}
	err := c.Client.Patch(ctx, r, client.RawPatch("application/merge-patch+json", patch))
	c.writes.note(r, false, err)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("setting PipelineRun %s spec.status to %q: %w", r.Name, st, err)
	}
	return nil
}

// supersede cancels r for newer inputs and says so on r, which is what
// lets decide tell the trigger's cancels from a user's.
func (c *Controller) supersede(ctx context.Context, r *pipelinev1.PipelineRun, st pipelinev1.PipelineRunSpecStatus, by string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}},"spec":{"status":%q}}`, AnnotSupersededBy, by, st)
	err := c.Client.Patch(ctx, r, client.RawPatch("application/merge-patch+json", patch))
	c.writes.note(r, false, err)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cancelling PipelineRun %s: %w", r.Name, err)
	}
	return nil
}

// stopRuns cancels pool's runs that have not reached rollout and reports
// whether some run is still in rollout.
func (c *Controller) stopRuns(ctx context.Context, pool *mcfgv1.MachineConfigPool, name, why string) error {
	_, err := c.stopUnstarted(ctx, pool, name, why)
	return err
}

func (c *Controller) stopUnstarted(ctx context.Context, pool *mcfgv1.MachineConfigPool, name, why string) (inRollout bool, err error) {
	runs, err := c.poolRuns(ctx, name)
	if err != nil {
		return false, err
	}
	for _, r := range runs {
		var st pipelinev1.PipelineRunSpecStatus = pipelinev1.PipelineRunSpecStatusCancelledRunFinally
		switch stateOf(r) {
		case runRollout:
			inRollout = true
			continue
		case runDone:
			continue
		case runPending:
			st = pipelinev1.PipelineRunSpecStatusCancelled
		}
		if err := c.setStatus(ctx, r, st); err != nil {
			return false, err
		}
		metricCancelled.WithLabelValues(name).Inc()
		if pool != nil {
			c.Recorder.Eventf(pool, corev1.EventTypeNormal, ReasonCancelled, "cancelled PipelineRun %s: %s", r.Name, why)
		}
	}
	return inRollout, nil
}

// revert handles a pool without kiln.dev/enabled=true: its unstarted runs
// stop, and once no run is rolling out, kiln's osImageURL MC is deleted so
// MCO takes the pool back to the payload's OS (the CoreOS layering enhancement).
func (c *Controller) revert(ctx context.Context, pool *mcfgv1.MachineConfigPool) error {
	var mc mcfgv1.MachineConfig
	err := c.Client.Get(ctx, client.ObjectKey{Name: rollout.MachineConfigName(pool.Name)}, &mc)
	if apierrors.IsNotFound(err) || (err == nil && mc.Labels[rollout.ManagedLabel] != "true") {
		// Never enabled, or already reverted; or a user's MC of that name.
		return c.stopRuns(ctx, pool, pool.Name, "pool is not kiln.dev/enabled")
	}
	if err != nil {
		return err
	}
	inRollout, err := c.stopUnstarted(ctx, pool, pool.Name, "pool is no longer kiln.dev/enabled")
	if err != nil {
		return fail(ReasonRuns, err)
	}
	if inRollout {
		c.Recorder.Event(pool, corev1.EventTypeNormal, ReasonRevertWait, "reverting to the payload's OS once the run in rollout finishes")
		return nil
	}
	if err := c.Client.Delete(ctx, &mc, client.Preconditions{UID: &mc.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fail(ReasonRuns, fmt.Errorf("deleting MachineConfig %s: %w", mc.Name, err))
	}
	metricReverts.WithLabelValues(pool.Name).Inc()
	c.Recorder.Eventf(pool, corev1.EventTypeNormal, ReasonReverted, "deleted MachineConfig %s (image %s): MCO reverts the pool to the payload's OS", mc.Name, mc.Spec.OSImageURL)
	log.FromContext(ctx).Info("reverted pool to the payload's OS", "pool", pool.Name, "machineconfig", mc.Name)
	return nil
}
