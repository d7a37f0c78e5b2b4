package trigger

import (
	"context"
	"fmt"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kiln-dev/kiln/pkg/payload"
)

// offersChanged passes ClusterVersion updates that change what the cluster
// is offered or runs: the CVO writes status.availableUpdates,
// status.conditionalUpdates and status.desired, which move no generation.
var offersChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*configv1.ClusterVersion)
	n, ok2 := e.ObjectNew.(*configv1.ClusterVersion)
	if !ok1 || !ok2 {
		return false
	}
	return !equality.Semantic.DeepEqual(o.Status.AvailableUpdates, n.Status.AvailableUpdates) ||
		!equality.Semantic.DeepEqual(o.Status.ConditionalUpdates, n.Status.ConditionalUpdates) ||
		!equality.Semantic.DeepEqual(o.Status.Desired, n.Status.Desired)
}}

// Upgrade-ahead runs build, sign and verify a pool's next node image for a
// release the cluster is offered, while it still runs the old one, and
// roll nothing out: a kernel module or a Containerfile that breaks on the
// new release fails there, before anyone starts the upgrade.
const (
	// TriggerUpgradeAhead is the kiln.dev/trigger of an upgrade-ahead run.
	TriggerUpgradeAhead = "upgrade-ahead"
	// LabelTargetRelease is the release (version) an upgrade-ahead run
	// prepares; AnnotTargetReleaseImage its release image by digest.
	LabelTargetRelease      = "run.kiln.dev/target-release"
	AnnotTargetReleaseImage = "kiln.dev/target-release-image"

	// pipelineAhead is the run.kiln.dev/pipeline of upgrade-ahead runs: they
	// run the node-image Pipeline, but the pool's own runs (decide, waves,
	// drift) never count them.
	pipelineAhead = "upgrade-ahead"

	// Params of the node-image Pipeline only the trigger sets: rollout
	// "false" skips the rollout task (and, with update-boot-images
	// "false", bootimages after it).
	paramRollout            = "rollout"
	paramTargetRelease      = "target-release"
	paramTargetReleaseImage = "target-release-image"
	// The target release's images, by digest: render's osImageURL and
	// extensions, kmod-build's OS_AUTO and DTK_AUTO. Empty (every other
	// run) means the running release's.
	paramOSImage         = "os-image"
	paramExtensionsImage = "extensions-image"
	paramDTKImage        = "dtk-image"
)

// Reasons of upgrade-ahead events.
const (
	ReasonAheadCreated   = "UpgradeAheadRunCreated"
	ReasonAheadCancelled = "UpgradeAheadRunCancelled"
	ReasonTargetSkipped  = "UpgradeTargetSkipped"
)

// aheadWant is one upgrade-ahead run a pool should have: its target, the
// fingerprint of the pool's inputs prepared for that target, and the
// target's payload (facts), or why it could not be read (err): then no
// run is made, and the pool is not ready for the target.
type aheadWant struct {
	target payload.Target
	sum    string
	facts  payload.Facts
	err    error
}

// AheadSum is the fingerprint of an upgrade-ahead run: the pool's inputs
// (poolSum) built for the target release. Local mode keys its upgrade-ahead
// runs on it too.
func AheadSum(poolSum string, t payload.Target) string {
	return digest([]byte(poolSum + "\x00" + t.Version + "\x00" + t.Image))
}

// aheadPlan is what decideAhead wants done.
type aheadPlan struct {
	create []aheadWant
	cancel map[*pipelinev1.PipelineRun]pipelinev1.PipelineRunSpecStatus
}

// decideAhead keeps one upgrade-ahead run per wanted target and pool
// inputs: a want without a run gets one, a live run nobody wants any more
// (its target was replaced by a newer release, is no longer offered, or
// the pool's inputs changed) is cancelled. As with decide, a run of a
// wanted fingerprint that failed or was cancelled by a user is not made
// again; kiln.dev/rebuild asks for that.
func decideAhead(runs []*pipelinev1.PipelineRun, wants []aheadWant) aheadPlan {
	p := aheadPlan{cancel: map[*pipelinev1.PipelineRun]pipelinev1.PipelineRunSpecStatus{}}
	have := map[string]bool{}
	wanted := map[string]bool{}
	for _, r := range runs {
		have[r.Labels[LabelFingerprint]] = true
	}
	for _, w := range wants {
		// A target whose payload cannot be read now keeps the run it has
		// (its payload was read when the run was made).
		wanted[w.sum] = true
		if !have[w.sum] && w.err == nil {
			p.create = append(p.create, w)
			have[w.sum] = true
		}
	}
	for _, r := range runs {
		if wanted[r.Labels[LabelFingerprint]] {
			continue
		}
		switch stateOf(r) {
		case runPending:
			p.cancel[r] = pipelinev1.PipelineRunSpecStatusCancelled
		case runActive:
			p.cancel[r] = pipelinev1.PipelineRunSpecStatusCancelledRunFinally
		}
	}
	return p
}

// aheadWants are the wanted upgrade-ahead runs of a pool under w. Offers
// that cannot be a target are told as a warning on the ClusterVersion,
// whose entry is at fault (the recorder folds the repeats of every pool's
// reconcile into one event's count).
func (c *Controller) aheadWants(w *world) []aheadWant {
	targets, skipped := payload.SelectTargets(w.cv, w.config.UpgradeAhead)
	for _, s := range skipped {
		c.Recorder.Event(w.cv, corev1.EventTypeWarning, ReasonTargetSkipped, s.Reason)
	}
	var wants []aheadWant
	for _, t := range targets {
		if errs := validation.IsValidLabelValue(t.Version); len(errs) > 0 {
			c.Recorder.Eventf(w.cv, corev1.EventTypeWarning, ReasonTargetSkipped,
				"ClusterVersion %s: release %q cannot be a %s label value: %s", payload.ClusterVersionName, t.Version, LabelTargetRelease, strings.Join(errs, "; "))
			continue
		}
		wants = append(wants, aheadWant{target: t, sum: AheadSum(w.fp.Sum, t)})
	}
	return wants
}

// readPayloads reads each want's target payload (facts, or err).
func (c *Controller) readPayloads(ctx context.Context, wants []aheadWant) {
	for i := range wants {
		wants[i].facts, wants[i].err = c.targetPayload(ctx, wants[i].target)
	}
}

// syncAhead brings pool's upgrade-ahead runs in line with wants (nil
// cancels them all: the pool is disabled or gone).
func (c *Controller) syncAhead(ctx context.Context, pool *mcfgv1.MachineConfigPool, name string, w *world, wants []aheadWant) error {
	runs, err := c.aheadRuns(ctx, name)
	if err != nil {
		return fail(ReasonRuns, err)
	}
	p := decideAhead(runs, wants)
	for _, r := range runs { // deterministic order
		st, ok := p.cancel[r]
		if !ok {
			continue
		}
		by := "none"
		if len(wants) > 0 {
			by = wants[len(wants)-1].sum
		}
		if err := c.supersede(ctx, r, st, by); err != nil {
			return fail(ReasonRuns, err)
		}
		metricCancelled.WithLabelValues(name).Inc()
		if pool != nil {
			c.Recorder.Eventf(pool, corev1.EventTypeNormal, ReasonAheadCancelled, "cancelled upgrade-ahead PipelineRun %s (release %s, %s): its target or the pool's inputs changed",
				r.Name, r.Labels[LabelTargetRelease], st)
		}
	}
	for _, want := range p.create {
		pr, err := c.createAhead(ctx, pool, w, want)
		if err != nil {
			return err
		}
		if pr != nil {
			// Told as running now: the status line is not written
			// twice, "creating" first and the run's name on its event.
			runs = append(runs, pr)
		}
	}
	var cv *configv1.ClusterVersion
	if w != nil {
		cv = w.cv
	}
	if err := c.publishReadiness(ctx, name, cv, runs, wants); err != nil {
		return err
	}
	if err := c.syncPins(ctx, pool, name, cv, runs, wants); err != nil {
		return fail(ReasonStaging, err)
	}
	if err := c.syncStatus(ctx, name, statusLines(name, runs, wants)); err != nil {
		return fail(ReasonRuns, err)
	}
	for _, want := range wants {
		if want.err != nil && runOf(runs, want.sum) == nil {
			return &retryAhead{after: c.registriesRetry()}
		}
	}
	return nil
}

// aheadRuns lists pool's upgrade-ahead runs as the trigger last wrote
// them (listRuns): every pool reconcile asks, and an edit must not wait
// on one more apiserver round trip for it.
func (c *Controller) aheadRuns(ctx context.Context, pool string) ([]*pipelinev1.PipelineRun, error) {
	return c.listRuns(ctx, pool, pipelineAhead)
}

// createAhead creates want's run and returns it (nil when it existed).
func (c *Controller) createAhead(ctx context.Context, pool *mcfgv1.MachineConfigPool, w *world, want aheadWant) (*pipelinev1.PipelineRun, error) {
	var err error
	if w.config.Cluster, err = c.clusterRun(ctx, w.pipeline); err != nil {
		return nil, err
	}
	pr := BuildAheadRun(w.config, RunSpec{Namespace: c.Namespace, Pool: pool.Name, Fingerprint: w.fp, Tasks: w.tasks}, want.target, want.facts)
	if err := validateRun(ctx, pr); err != nil {
		return nil, fail(ReasonConfig, err)
	}
	err = c.Client.Create(ctx, pr)
	c.writes.note(pr, false, err)
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, nil
		}
		return nil, fail(ReasonRuns, fmt.Errorf("creating upgrade-ahead PipelineRun %s: %w", pr.Name, err))
	}
	metricCreated.WithLabelValues(pool.Name, TriggerUpgradeAhead).Inc()
	c.Recorder.Eventf(pool, corev1.EventTypeNormal, ReasonAheadCreated, "created PipelineRun %s: prepares release %s (%s, selected as %s) on its OS image %s and driver-toolkit %s, with no rollout",
		pr.Name, want.target.Version, want.target.Image, strings.Join(want.target.Why, ", "), want.facts.BaseOSImage, want.facts.DriverToolkitImage)
	return pr, nil
}

// BuildAheadRun makes pool's upgrade-ahead run for target from the spec of
// its normal run (s: pool, inputs' fingerprint, tasks): trigger
// upgrade-ahead, the target in its name, labels and params, the target's
// base OS, extensions and driver-toolkit images (f) as the params every
// stage builds on, the rollout and bootimages tasks skipped.
func BuildAheadRun(c Config, s RunSpec, t payload.Target, f payload.Facts) *pipelinev1.PipelineRun {
	sum := AheadSum(s.Fingerprint.Sum, t)
	s.Fingerprint = Fingerprint{Sum: sum, Parts: s.Fingerprint.Parts, Inputs: s.Fingerprint.Inputs}
	s.Trigger = TriggerUpgradeAhead
	s.Changes = AheadChanges(t)
	s.BootImages, s.Pending, s.KmodRebuild = "", false, false
	pr := BuildRun(c, s)
	pr.Name = AheadRunName(s.Pool, t.Version, sum)
	pr.Labels[LabelPipeline] = pipelineAhead
	pr.Labels[LabelTargetRelease] = t.Version
	pr.Annotations[AnnotTargetReleaseImage] = t.Image
	params := AheadParams(t, f)
	for _, k := range sortedKeys(params) {
		setParam(pr, k, params[k])
	}
	return pr
}

// AheadChanges is an upgrade-ahead run's changes param: what it prepares.
func AheadChanges(t payload.Target) string {
	return fmt.Sprintf("prepares release %s (%s) ahead of the upgrade; no rollout", t.Version, t.Image)
}

// AheadParams are the node-image params that make a run an upgrade-ahead
// run for target t, over the params of the pool's normal run: no rollout,
// the target named, and its base OS, extensions and driver-toolkit images
// (f) as the images every stage builds on. Cluster and local mode both
// set exactly these.
func AheadParams(t payload.Target, f payload.Facts) map[string]string {
	return map[string]string{
		paramRollout:            "false",
		paramTargetRelease:      t.Version,
		paramTargetReleaseImage: t.Image,
		paramOSImage:            f.BaseOSImage,
		paramExtensionsImage:    f.ExtensionsImage,
		paramDTKImage:           f.DriverToolkitImage,
	}
}

// AheadRunName names the run after its pool and target release
// (kiln-worker-ahead-4.19.1-<sum>); a release that does not fit a run name
// falls back to RunName's "upgrade-ahead".
func AheadRunName(pool, version, sum string) string {
	trig := "ahead-" + strings.ToLower(version)
	if n := RunName(pool, trig, sum); len(validation.IsDNS1123Subdomain(n)) == 0 && strings.Contains(n, trig) {
		return n
	}
	return RunName(pool, TriggerUpgradeAhead, sum)
}

// setParam sets a run's param, keeping them sorted by name as newRun
// makes them.
func setParam(pr *pipelinev1.PipelineRun, name, value string) {
	v := *pipelinev1.NewStructuredValues(value)
	for i := range pr.Spec.Params {
		if pr.Spec.Params[i].Name == name {
			pr.Spec.Params[i].Value = v
			return
		}
	}
	i := 0
	for i < len(pr.Spec.Params) && pr.Spec.Params[i].Name < name {
		i++
	}
	pr.Spec.Params = append(pr.Spec.Params[:i], append([]pipelinev1.Param{{Name: name, Value: v}}, pr.Spec.Params[i:]...)...)
}

// skipsRollout checks that Pipeline p skips every task that changes the
// cluster when the rollout param is "false": it declares the param, and
// each of rolloutTasks has a when expression on it or runs only after one
// that has. An older Pipeline without it would roll an upgrade-ahead run
// out, so the trigger makes none under it.
func skipsRollout(p *pipelinev1.Pipeline) error {
	declared := false
	for _, ps := range p.Spec.Params {
		declared = declared || ps.Name == paramRollout
	}
	if !declared {
		return fmt.Errorf("Pipeline %s/%s: spec.params has no %q: it cannot run upgrade-ahead runs without rolling them out (update the Pipeline)", p.Namespace, p.Name, paramRollout)
	}
	guarded := map[string]bool{}
	want := "$(params." + paramRollout + ")"
	for _, t := range p.Spec.Tasks {
		for _, w := range t.When {
			if w.Input == want && w.Operator == selection.In && len(w.Values) == 1 && w.Values[0] == "true" {
				guarded[t.Name] = true
			}
		}
	}
	// Tekton runs the dependents of a task its when expression skipped,
	// so runAfter alone guards nothing: each such task needs its own when.
	for _, t := range append(append([]pipelinev1.PipelineTask(nil), p.Spec.Tasks...), p.Spec.Finally...) {
		if rolloutTasks[t.Name] && !guarded[t.Name] && !bootImagesOff(t) {
			return fmt.Errorf("Pipeline %s/%s: task %s has no when expression %s in [\"true\"]: an upgrade-ahead run would change the cluster", p.Namespace, p.Name, t.Name, want)
		}
	}
	return nil
}

// bootImagesOff: the task is skipped by update-boot-images "false", which
// upgrade-ahead runs set.
func bootImagesOff(t pipelinev1.PipelineTask) bool {
	for _, w := range t.When {
		if w.Input == "$(params.update-boot-images)" && w.Operator == selection.In && len(w.Values) == 1 && w.Values[0] == "true" {
			return true
		}
	}
	return false
}
