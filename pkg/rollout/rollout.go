package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imageref"
	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/work"
)

// Verifier checks an image against the signature policy before anything
// is written; pkg/signing's policy evaluation implements it.
type Verifier interface {
	Verify(ctx context.Context, image string) error
}

// Config is one rollout.
type Config struct {
	Client client.WithWatch
	Pool   string
	// Image is repo@sha256:<hex>; a tag is refused.
	Image string
	// MaxUnavailable, when set, overrides the pool's during the rollout.
	MaxUnavailable *intstr.IntOrString
	// Canary lets this many nodes update first, pauses the pool, checks
	// them, then lets the rest go.
	Canary int
	// Timeout bounds the whole rollout; past it kiln rolls back.
	Timeout time.Duration
	// SettleTimeout bounds the wait for the pool after a rollback.
	SettleTimeout time.Duration
	Verifier      Verifier
	// Out receives progress: the node table on every change.
	Out io.Writer
	// DriftGate is enforce, warn or off (drift.go); "" means enforce.
	DriftGate string
	// Prediction is the rendered config MCO is expected to make with the
	// image (render.Predict); the gate needs it unless off, but
	// only when it has something to compare: a run that writes nothing
	// (kiln's MachineConfig already names the image) runs without it.
	Prediction *mcrender.Prediction
	// NoController says no MCO acts on what Client writes: Client is a
	// folder of manifests (kube.Folder), where the written MachineConfig
	// is the GitOps change and nothing renders or updates nodes. The run
	// then ends once kiln's MachineConfig is written, the same object and
	// update as on a cluster: State Written (Unchanged when it already
	// named the image), the drift gate Off (there will be no render to
	// compare, so no Prediction is needed), and no pool override, wait,
	// canary or rollback, which all need MCO. It is the only difference
	// between the two sources.
	NoController bool
}

// States reported in ROLLOUT_STATE.
const (
	StateSucceeded  = "Succeeded"
	StateUnchanged  = "Unchanged"
	StateRolledBack = "RolledBack"
	// StateRollbackFailed: the rollout failed and so did restoring the
	// previous image; the pool needs a person.
	StateRollbackFailed = "RollbackFailed"
	StateRefused        = "Refused"
	// StateWritten: kiln's MachineConfig was written where no controller
	// acts on it (Config.NoController): a folder's GitOps change.
	StateWritten = "Written"
)

// Result is what a rollout did.
type Result struct {
	State        string
	UpdatedNodes int
	// Rendered is the rendered config the pool reached with the image.
	Rendered string
	Timeline []work.Event
	// Gate is what the drift gate did (GatePassed, …); Predicted is the
	// name it compared with; Drift is the diff when MCO's name differed.
	Gate      string
	Predicted string
	Drift     *work.Drift
}

// Run rolls cfg.Image out to cfg.Pool. On failure it rolls back and
// returns an error naming the node, the condition and its message.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.DriftGate == "" {
		cfg.DriftGate = DefaultDriftGate
	}
	if err := cfg.validate(); err != nil {
		return Result{State: StateRefused}, err
	}
	// The image is checked first: a refused image is reported as such
	// whatever the pool's source holds.
	if err := cfg.Verifier.Verify(ctx, cfg.Image); err != nil {
		return Result{State: StateRefused}, verifyError(cfg.Image, cfg.Pool, err)
	}
	pool := &mcfgv1.MachineConfigPool{}
	if err := cfg.Client.Get(ctx, client.ObjectKey{Name: cfg.Pool}, pool); err != nil {
		return Result{State: StateRefused}, fmt.Errorf("reading MachineConfigPool %s: %w", cfg.Pool, err)
	}
	if cfg.NoController {
		return written(ctx, cfg, pool)
	}
	r := &roller{cfg: cfg, w: newWatcher(cfg.Client, cfg.Pool, cfg.Out)}
	return r.run(ctx, pool)
}

// written is a run no controller acts on (Config.NoController): kiln's
// MachineConfig is created or updated as on a cluster, and the run ends.
func written(ctx context.Context, cfg Config, pool *mcfgv1.MachineConfigPool) (Result, error) {
	applied, err := applyImage(ctx, cfg.Client, pool, cfg.Image)
	if err != nil {
		return Result{State: StateRefused}, err
	}
	if !applied.Changed {
		return Result{State: StateUnchanged, Gate: GateOff}, nil
	}
	return Result{State: StateWritten, Gate: GateOff}, nil
}

// verifyError is the error of a pre-write check of image: a refusal
// (exit 3) when the image failed it, a failure (exit 1) when the registry
// did not answer (exitcode.IsFault), which says nothing about the image.
func verifyError(image, pool string, err error) error {
	if exitcode.IsFault(err) {
		return fmt.Errorf("checking %s before rolling out to pool %s: %w", image, pool, err)
	}
	return exitcode.Refused(fmt.Errorf("refusing to roll out %s to pool %s: %w", image, pool, err))
}

func (cfg Config) validate() error {
	switch {
	case cfg.Client == nil || cfg.Verifier == nil:
		return errors.New("rollout: a client and a verifier are required")
	case cfg.Pool == "":
		return errors.New("rollout: pool is empty")
	case !imageref.IsDigestRef(cfg.Image):
		return fmt.Errorf("rollout: image %q is not a digest reference (repo@sha256:<64 hex>): a tag could move under the pool", cfg.Image)
	case cfg.Canary < 0:
		return fmt.Errorf("rollout: canary %d is negative", cfg.Canary)
	case ValidDriftGate(cfg.DriftGate) != nil:
		return fmt.Errorf("rollout: %w", ValidDriftGate(cfg.DriftGate))
	}
	return nil
}

type roller struct {
	cfg  Config
	w    *watcher
	prev applyResult
	// held: the drift gate holds the pool paused (this run paused it, or
	// a crashed run did and left GatePausedAnnot).
	held bool
	// gate is what the drift gate did; drift its diff (mode warn).
	gate  string
	drift *work.Drift
}

func (r *roller) run(ctx context.Context, pool *mcfgv1.MachineConfigPool) (Result, error) {
	prevRendered := pool.Spec.Configuration.Name
	applied, err := r.apply(ctx, pool)
	if err != nil {
		return Result{State: StateRefused}, err
	}
	deadline, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	if res, stop, err := r.runGate(ctx, deadline, pool, prevRendered); stop {
		return res, err
	}
	rendered, err := r.progress(deadline, applied)
	if err != nil {
		return r.rollback(ctx, err)
	}
	if err := r.finish(ctx); err != nil {
		return r.result(StateSucceeded, ""), err
	}
	state := StateSucceeded
	if !applied.Changed {
		state = StateUnchanged
	}
	res := r.result(state, rendered)
	res.UpdatedNodes = int(r.w.v.pool.Status.UpdatedMachineCount)
	r.w.log.table(r.w.v.tracker, true)
	_, digest, _ := strings.Cut(r.cfg.Image, "@")
	r.w.log.printf("%d/%d nodes on %s (%s)", res.UpdatedNodes, r.w.v.pool.Status.MachineCount, digest, rendered)
	return res, nil
}

// result is a Result with what the gate did.
func (r *roller) result(state, rendered string) Result {
	res := Result{State: state, Rendered: rendered, Timeline: r.w.v.tracker.Timeline(), Gate: r.gate, Drift: r.drift}
	if r.cfg.Prediction != nil && r.cfg.Prediction.Config != nil && r.gate != GateOff {
		res.Predicted = r.cfg.Prediction.Config.Name
	}
	return res
}

// runGate runs the drift gate when this run holds the pool; stop is true
// when the rollout ends here (drift in mode enforce, or a failure while
// waiting for MCO's render, which is undone the same careful way).
func (r *roller) runGate(ctx, deadline context.Context, pool *mcfgv1.MachineConfigPool, prevRendered string) (Result, bool, error) {
	switch {
	case !r.gateOn():
		r.gate = GateOff
		if r.held { // a crashed run's hold, and the gate is now off
			if err := releasePool(ctx, r.cfg.Client, r.cfg.Pool, true); err != nil {
				res, rerr := r.rollback(ctx, err)
				return res, true, rerr
			}
		}
		return Result{}, false, nil
	case !r.held:
		r.gate = GateSkipped
		return Result{}, false, nil
	}
	d, err := r.compare(deadline)
	if err != nil {
		res, rerr := r.undoGate(ctx, err)
		return res, true, rerr
	}
	if d == nil {
		r.gate = GatePassed
		if err := releasePool(ctx, r.cfg.Client, r.cfg.Pool, true); err != nil {
			res, rerr := r.rollback(ctx, err)
			return res, true, rerr
		}
		return Result{}, false, nil
	}
	r.gate, r.drift = GateDrift, d
	r.event(ctx, pool, d)
	if r.cfg.DriftGate == DriftGateEnforce {
		res, err := r.stopForDrift(ctx, d, prevRendered)
		return res, true, err
	}
	r.w.log.printf("drift gate (warn): going on with MCO's %s", d.Rendered)
	if err := releasePool(ctx, r.cfg.Client, r.cfg.Pool, true); err != nil {
		res, rerr := r.rollback(ctx, err)
		return res, true, rerr
	}
	return Result{}, false, nil
}

// undoGate: the gate failed before comparing (MCO did not render in time,
// or reported the render degraded); kiln's MachineConfig is taken back
// while the pool is still held.
func (r *roller) undoGate(ctx context.Context, cause error) (Result, error) {
	res := r.result(StateRolledBack, "")
	target := r.prev.Previous
	if !r.prev.Existed {
		target = "(payload default; kiln's MachineConfig deleted)"
	}
	if _, err := r.retreat(ctx); err != nil {
		res.State = StateRollbackFailed
		return res, fmt.Errorf("rollout of %s to pool %s failed: %w; rollback failed: %v", r.cfg.Image, r.cfg.Pool, cause, err)
	}
	res.Timeline = r.w.v.tracker.Timeline()
	return res, fmt.Errorf("rollout of %s to pool %s failed: %w; rolled back to %s", r.cfg.Image, r.cfg.Pool, cause, target)
}

// apply writes kiln's MC (at most once) and the maxUnavailable override.
// When the MC already names the image, this run resumes a previous one:
// the image to roll back to comes from the MC's annotation.
func (r *roller) apply(ctx context.Context, pool *mcfgv1.MachineConfigPool) (applyResult, error) {
	if r.cfg.MaxUnavailable != nil || r.cfg.Canary > 0 {
		v := r.cfg.MaxUnavailable
		if r.cfg.Canary > 0 {
			c := intstr.FromInt32(int32(r.cfg.Canary))
			v = &c
		}
		if err := overrideMaxUnavailable(ctx, r.cfg.Client, pool, *v); err != nil {
			return applyResult{}, err
		}
	}
	// The drift gate holds the pool before kiln's MachineConfig exists, so
	// no node can target MCO's render of it before the gate has looked.
	_, r.held = pool.Annotations[GatePausedAnnot]
	gated := r.gateOn() && (r.held || !r.namesImage(ctx))
	if gated && (r.cfg.Prediction == nil || r.cfg.Prediction.Config == nil) {
		// Checked only now: a run with nothing to write needs no prediction.
		return applyResult{}, errors.Join(fmt.Errorf("rollout: the drift gate (%s) needs kiln's prediction of the rendered config (render's mco-inputs.json); --drift-gate=off skips it", r.cfg.DriftGate),
			restoreMaxUnavailable(ctx, r.cfg.Client, r.cfg.Pool))
	}
	if gated && !r.held {
		if err := holdPool(ctx, r.cfg.Client, pool); err != nil {
			return applyResult{}, errors.Join(err, restoreMaxUnavailable(ctx, r.cfg.Client, r.cfg.Pool))
		}
		r.held = true
	}
	res, err := applyImage(ctx, r.cfg.Client, pool, r.cfg.Image)
	if err != nil {
		return applyResult{}, errors.Join(err, restoreMaxUnavailable(ctx, r.cfg.Client, r.cfg.Pool), releasePool(ctx, r.cfg.Client, r.cfg.Pool, false))
	}
	r.prev = res
	if !res.Changed {
		mc := &mcfgv1.MachineConfig{}
		if err := r.cfg.Client.Get(ctx, client.ObjectKey{Name: MachineConfigName(r.cfg.Pool)}, mc); err == nil {
			prevImage, had := mc.Annotations[PreviousImageAnnot]
			r.prev = applyResult{Existed: had, Previous: prevImage}
		}
	}
	return res, nil
}

// namesImage reports whether kiln's MachineConfig already names the image.
func (r *roller) namesImage(ctx context.Context) bool {
	mc := &mcfgv1.MachineConfig{}
	err := r.cfg.Client.Get(ctx, client.ObjectKey{Name: MachineConfigName(r.cfg.Pool)}, mc)
	return err == nil && mc.Spec.OSImageURL == r.cfg.Image
}

// progress waits for the canary (if any) and then the whole pool.
func (r *roller) progress(ctx context.Context, applied applyResult) (string, error) {
	var rendered string
	if err := r.w.waitFor(ctx, "pool "+r.cfg.Pool+" to render the image", r.rendered(&rendered)); err != nil {
		return "", err
	}
	if r.cfg.Canary > 0 {
		if err := r.canary(ctx, rendered); err != nil {
			return rendered, err
		}
	}
	return rendered, r.w.waitFor(ctx, "pool "+r.cfg.Pool+" to update", r.poolUpdated(rendered))
}

// finish restores the maxUnavailable override and unpauses (ending a
// drift gate hold a failure left).
func (r *roller) finish(ctx context.Context) error {
	return errors.Join(
		restoreMaxUnavailable(ctx, r.cfg.Client, r.cfg.Pool),
		releasePool(ctx, r.cfg.Client, r.cfg.Pool, true),
	)
}

// rollback restores the previous image, waits (bounded) for the pool to
// settle, and returns the original failure with what was done about it.
func (r *roller) rollback(ctx context.Context, cause error) (Result, error) {
	res := r.result(StateRolledBack, "")
	target := r.prev.Previous
	if !r.prev.Existed {
		target = "(payload default; kiln's MachineConfig deleted)"
	}
	if err := errors.Join(restore(ctx, r.cfg.Client, r.cfg.Pool, r.prev), r.finish(ctx)); err != nil {
		res.State = StateRollbackFailed
		return res, fmt.Errorf("rollout of %s to pool %s failed: %w; rollback failed: %v", r.cfg.Image, r.cfg.Pool, cause, err)
	}
	settle, cancel := context.WithTimeout(ctx, r.cfg.SettleTimeout)
	defer cancel()
	settleErr := r.w.waitFor(settle, "pool "+r.cfg.Pool+" to settle after rollback", r.settled)
	res.Timeline = r.w.v.tracker.Timeline()
	if settleErr != nil {
		return res, fmt.Errorf("rollout of %s to pool %s failed: %w; rolled back to %s, but %v", r.cfg.Image, r.cfg.Pool, cause, target, settleErr)
	}
	return res, fmt.Errorf("rollout of %s to pool %s failed: %w; rolled back to %s", r.cfg.Image, r.cfg.Pool, cause, target)
}

// settled: the pool has moved off the failed rendered config and all its
// machines are updated and none degraded.
func (r *roller) settled(_ context.Context, v *view) (bool, error) {
	p := v.pool
	return p.Spec.Configuration.Name != "" &&
		p.Status.Configuration.Name == p.Spec.Configuration.Name &&
		p.Status.UpdatedMachineCount == p.Status.MachineCount &&
		p.Status.DegradedMachineCount == 0 &&
		!r.imageRendered(p.Spec.Configuration.Name), nil
}

func (r *roller) imageRendered(name string) bool {
	mc := &mcfgv1.MachineConfig{}
	if err := r.cfg.Client.Get(context.Background(), client.ObjectKey{Name: name}, mc); err != nil {
		return false
	}
	return mc.Spec.OSImageURL == r.cfg.Image
}

// rendered waits until the pool's spec names a rendered config carrying
// the image: MCO has merged kiln's MC.
func (r *roller) rendered(out *string) condition {
	return func(ctx context.Context, v *view) (bool, error) {
		if err := degraded(v); err != nil {
			return false, err
		}
		name := v.pool.Spec.Configuration.Name
		if name == "" || !r.imageRendered(name) {
			return false, nil
		}
		*out = name
		return true, nil
	}
}

// poolUpdated waits until every machine of the pool runs the rendered
// config; a degraded pool or node fails the wait.
func (r *roller) poolUpdated(rendered string) condition {
	return func(_ context.Context, v *view) (bool, error) {
		if err := degraded(v); err != nil {
			return false, err
		}
		p := v.pool
		poolDone := p.Status.Configuration.Name == rendered &&
			p.Status.MachineCount > 0 &&
			p.Status.UpdatedMachineCount == p.Status.MachineCount &&
			conditionTrue(p, mcfgv1.MachineConfigPoolUpdated)
		// The pool counts a node once MCO marks it Done; its
		// MachineConfigNode says Updated a moment later, and that is the
		// end of the MachineConfigNode update cycle.
		return poolDone && len(v.tracker.Nodes()) == int(p.Status.MachineCount) &&
			allUpdated(v, nodeNames(v), rendered), nil
	}
}

// degraded returns an error naming the node, condition and message when a
// node or the pool is degraded.
func degraded(v *view) error {
	for _, mcn := range v.tracker.Nodes() {
		if c, ok := nodeDegraded(mcn); ok {
			return fmt.Errorf("node %s: %s: %s", mcn.Name, c.Type, c.Message)
		}
	}
	for _, t := range []mcfgv1.MachineConfigPoolConditionType{mcfgv1.MachineConfigPoolNodeDegraded, mcfgv1.MachineConfigPoolRenderDegraded, mcfgv1.MachineConfigPoolDegraded} {
		for _, c := range v.pool.Status.Conditions {
			if c.Type == t && c.Status == "True" {
				return fmt.Errorf("pool %s: %s: %s", v.pool.Name, c.Type, c.Message)
			}
		}
	}
	return nil
}

func conditionTrue(p *mcfgv1.MachineConfigPool, t mcfgv1.MachineConfigPoolConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == "True"
		}
	}
	return false
}

func nodeNames(v *view) []string {
	var out []string
	for _, mcn := range v.tracker.Nodes() {
		out = append(out, mcn.Name)
	}
	return out
}
