package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/work"
)

// The drift gate (README "Drift gate"): before any node may update, kiln
// holds the pool paused, writes its MachineConfig, waits for MCO to render
// the pool's next config and compares MCO's name with the one kiln
// predicted for the image (mcrender.Predict). Equal: the pool is let go.
// Different: the pool stays held, kiln's MachineConfig is taken back, MCO
// renders the previous config again, and only then is the pool's own
// paused state restored, so no node ever targets the drifted config.

// Drift gate modes (--drift-gate, kiln-config driftGate).
const (
	DriftGateEnforce = "enforce"
	DriftGateWarn    = "warn"
	DriftGateOff     = "off"
	DefaultDriftGate = DriftGateEnforce
)

// DriftGateModes lists the modes, for validation messages.
var DriftGateModes = []string{DriftGateEnforce, DriftGateWarn, DriftGateOff}

// StateDriftDetected: MCO rendered another config than kiln predicted; no
// node moved and kiln's MachineConfig was taken back.
const StateDriftDetected = "DriftDetected"

// What the gate did, in the DRIFT_GATE result.
const (
	GatePassed  = "Passed"
	GateDrift   = "Drift"
	GateOff     = "Off"
	GateSkipped = "Skipped" // nothing was written (the MC already named the image)
)

// ErrDriftDetected is wrapped by the error of a rollout the gate stopped
// (mode enforce); kiln-steps maps it to its own exit code.
var ErrDriftDetected = errors.New("drift detected")

// GatePausedAnnot is on the pool while the gate holds it: the pool's own
// spec.paused from before, restored when the gate lets go (a later run
// finds it if this one crashed).
const GatePausedAnnot = "kiln.dev/drift-gate-paused"

// EventReasonDrift is the reason of the Warning event on the pool.
const EventReasonDrift = "DriftDetected"

// ValidDriftGate checks a mode.
func ValidDriftGate(mode string) error {
	switch mode {
	case DriftGateEnforce, DriftGateWarn, DriftGateOff:
		return nil
	}
	return fmt.Errorf("drift gate %q: want enforce, warn or off", mode)
}

func (r *roller) gateOn() bool { return r.cfg.DriftGate != DriftGateOff }

// holdPool pauses the pool before kiln's MachineConfig is written and
// remembers its own paused state, unless a crashed run already did.
func holdPool(ctx context.Context, c client.Client, pool *mcfgv1.MachineConfigPool) error {
	base := pool.DeepCopy()
	if _, ok := pool.Annotations[GatePausedAnnot]; !ok {
		pool.Annotations = mergeMaps(pool.Annotations, map[string]string{GatePausedAnnot: strconv.FormatBool(pool.Spec.Paused)})
	}
	pool.Spec.Paused = true
	// A merge patch of just these two fields: MCO writes the pool's status
	// all the time, so a resourceVersion precondition would only conflict.
	if err := c.Patch(ctx, pool, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("pausing MachineConfigPool %s for the drift gate: %w", pool.Name, err)
	}
	return nil
}

// releasePool ends the hold: unpause lets the rollout go on; otherwise the
// pool's own paused state comes back. Without a hold, unpause only
// unpauses (the end of every rollout).
func releasePool(ctx context.Context, c client.Client, name string, unpause bool) error {
	pool := &mcfgv1.MachineConfigPool{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, pool); err != nil {
		return fmt.Errorf("reading MachineConfigPool %s: %w", name, err)
	}
	orig, held := pool.Annotations[GatePausedAnnot]
	want := !unpause && orig == "true"
	if !held && pool.Spec.Paused == want {
		return nil
	}
	base := pool.DeepCopy()
	delete(pool.Annotations, GatePausedAnnot)
	pool.Spec.Paused = want
	if err := c.Patch(ctx, pool, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("setting paused=%v on MachineConfigPool %s: %w", want, name, err)
	}
	return nil
}

// gate waits for MCO's render of kiln's MachineConfig and compares it with
// the prediction. A nil Drift means the names are equal.
func (r *roller) compare(ctx context.Context) (*work.Drift, error) {
	start := time.Now()
	var mcoName string
	if err := r.w.waitFor(ctx, "MCO to render pool "+r.cfg.Pool+" with kiln's MachineConfig", r.rendered(&mcoName)); err != nil {
		return nil, err
	}
	want := r.cfg.Prediction.Config.Name
	if mcoName == want {
		r.w.log.printf("drift gate passed: MCO rendered %s (%s)", mcoName, time.Since(start).Round(time.Millisecond))
		return nil, nil
	}
	d, err := r.diff(ctx, mcoName)
	if err != nil {
		return nil, fmt.Errorf("drift gate: MCO rendered %s, kiln predicted %s, and the diff failed: %w", mcoName, want, err)
	}
	fmt.Fprintf(r.cfg.Out, "drift gate: %s", d.Text())
	return d, nil
}

// diff reads MCO's rendered config and the inputs MCO lists for it.
func (r *roller) diff(ctx context.Context, name string) (*work.Drift, error) {
	mco := &mcfgv1.MachineConfig{}
	if err := r.cfg.Client.Get(ctx, client.ObjectKey{Name: name}, mco); err != nil {
		return nil, fmt.Errorf("reading MCO's rendered MachineConfig %s: %w", name, err)
	}
	var inputs []*mcfgv1.MachineConfig
	if r.w.v.pool.Spec.Configuration.Name == name {
		for _, ref := range r.w.v.pool.Spec.Configuration.Source {
			mc := &mcfgv1.MachineConfig{}
			err := r.cfg.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, mc)
			switch {
			case apierrors.IsNotFound(err):
				continue // deleted since MCO rendered
			case err != nil:
				return nil, fmt.Errorf("reading MachineConfig %s (an input of %s): %w", ref.Name, name, err)
			}
			inputs = append(inputs, mc)
		}
	}
	return mcrender.CompareRendered(r.cfg.Prediction, mco, inputs)
}

// retreat takes kiln's MachineConfig back while the pool is still held,
// waits (bounded by SettleTimeout) for MCO to render a config without the
// image, and only then restores the pool's own paused state. If MCO does
// not render back in time the pool stays paused: its spec may still name
// the config no node must take.
func (r *roller) retreat(ctx context.Context) (back string, err error) {
	if err := restore(ctx, r.cfg.Client, r.cfg.Pool, r.prev); err != nil {
		return "", err
	}
	settle, cancel := context.WithTimeout(ctx, r.cfg.SettleTimeout)
	defer cancel()
	err = r.w.waitFor(settle, "pool "+r.cfg.Pool+" to render its previous config", func(_ context.Context, v *view) (bool, error) {
		back = v.pool.Spec.Configuration.Name
		return back != "" && !r.imageRendered(back), nil
	})
	if err != nil {
		return "", fmt.Errorf("%w; pool %s left paused", err, r.cfg.Pool)
	}
	return back, errors.Join(restoreMaxUnavailable(ctx, r.cfg.Client, r.cfg.Pool), releasePool(ctx, r.cfg.Client, r.cfg.Pool, false))
}

// stopForDrift ends an enforced rollout the gate stopped.
func (r *roller) stopForDrift(ctx context.Context, d *work.Drift, prevRendered string) (Result, error) {
	res := Result{State: StateDriftDetected, Gate: GateDrift, Drift: d, Predicted: d.Predicted}
	back, err := r.retreat(ctx)
	res.Timeline = r.w.v.tracker.Timeline()
	if err != nil {
		res.State = StateRollbackFailed
		return res, fmt.Errorf("rollout of %s to pool %s stopped: %w: %s; taking kiln's MachineConfig back failed: %v", r.cfg.Image, r.cfg.Pool, ErrDriftDetected, d.Cause, err)
	}
	res.Rendered = back
	note := ""
	if prevRendered != "" && back != prevRendered {
		note = fmt.Sprintf(" (not %s: the pool's inputs changed meanwhile)", prevRendered)
	}
	return res, fmt.Errorf("rollout of %s to pool %s stopped before any node moved: %w: MCO rendered %s, kiln predicted %s: %s; kiln's MachineConfig taken back, pool on %s%s",
		r.cfg.Image, r.cfg.Pool, ErrDriftDetected, d.Rendered, d.Predicted, d.Cause, back, note)
}

// event records the drift on the pool. Cluster-scoped objects' events live
// in the default namespace. A failure to record is reported, not fatal:
// the result and the report say the same.
func (r *roller) event(ctx context.Context, pool *mcfgv1.MachineConfigPool, d *work.Drift) {
	now := metav1.Now()
	msg := fmt.Sprintf("drift gate (%s): MCO rendered %s, kiln predicted %s for %s: %s", r.cfg.DriftGate, d.Rendered, d.Predicted, r.cfg.Image, d.Cause)
	if len(msg) > 1024 {
		msg = msg[:1021] + "..."
	}
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pool.Name + ".drift-", Namespace: metav1.NamespaceDefault},
		InvolvedObject: corev1.ObjectReference{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfigPool",
			Name: pool.Name, UID: pool.UID, ResourceVersion: pool.ResourceVersion},
		Reason: EventReasonDrift, Message: msg, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "kiln-rollout"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "kiln.dev/rollout", ReportingInstance: "kiln-rollout",
	}
	if err := r.cfg.Client.Create(ctx, ev); err != nil {
		r.w.log.printf("drift gate: recording the event on pool %s: %v", pool.Name, err)
	}
}

// writeDrift writes the diff, when there is one, as JSON (the report reads
// it) and as text (for people).
func writeDrift(dir string, d *work.Drift) error {
	if d == nil {
		return nil
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the drift diff: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, work.DriftJSON), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the drift diff: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, work.DriftText), []byte(d.Text()), 0o644); err != nil {
		return fmt.Errorf("writing the drift diff: %w", err)
	}
	return nil
}

// predict computes the prediction for the image from render's saved
// inputs (work.MCOInputs) and, when image-sign recorded the one it
// attested, refuses to go on unless both are the same: the gate compares
// MCO's render with the attested prediction.
func (o *StepOptions) predict(ctx context.Context) (*mcrender.Prediction, error) {
	ws := o.Workspace()
	in, err := ws.ReadMCOInputs()
	if errors.Is(err, os.ErrNotExist) {
		// No render in this workspace (the Task run alone): Run refuses
		// only if the gate has something to compare.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("drift gate: %w (--drift-gate=off skips the gate)", err)
	}
	if in.Pool.Name != o.Pool {
		return nil, fmt.Errorf("drift gate: render's inputs are for pool %s, not %s", in.Pool.Name, o.Pool)
	}
	p, err := mcrender.Predict(ctx, in, o.Image)
	if err != nil {
		return nil, fmt.Errorf("drift gate: %w", err)
	}
	rec, ok, err := ws.ReadPredictionRecord()
	if err != nil {
		return nil, fmt.Errorf("drift gate: %w", err)
	}
	if ok && (rec.Image != o.Image || rec.Name != p.Config.Name) {
		return nil, fmt.Errorf("drift gate: image-sign attested %s for %s, but render's inputs predict %s for %s", rec.Name, rec.Image, p.Config.Name, o.Image)
	}
	return p, nil
}
