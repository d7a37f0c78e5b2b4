package rollout

import (
	"context"
	"errors"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MCO's node annotations, read to check a canary node.
const (
	CurrentConfigAnnot = "machineconfiguration.openshift.io/currentConfig"
	DesiredConfigAnnot = "machineconfiguration.openshift.io/desiredConfig"
	StateAnnot         = "machineconfiguration.openshift.io/state"
	CurrentImageAnnot  = "machineconfiguration.openshift.io/currentImage"
	StateDone          = "Done"
)

// canary lets the first nodes take the rendered config, pauses the pool
// while they finish, checks them, and lets the rest go. maxUnavailable is
// already the canary size, so no more nodes can start before the pause.
func (r *roller) canary(ctx context.Context, rendered string) error {
	var started []string
	if err := r.w.waitFor(ctx, fmt.Sprintf("%d canary node(s) to start", r.cfg.Canary), func(_ context.Context, v *view) (bool, error) {
		if err := degraded(v); err != nil {
			return false, err
		}
		started = nodesTargeting(v, rendered)
		want := min(r.cfg.Canary, int(v.pool.Status.MachineCount))
		return want > 0 && len(started) >= want, nil
	}); err != nil {
		return err
	}
	if err := setPaused(ctx, r.cfg.Client, r.cfg.Pool, true); err != nil {
		return err
	}
	r.w.log.printf("canary: pool %s paused; waiting for %v", r.cfg.Pool, started)
	if err := r.w.waitFor(ctx, "canary nodes to update", func(_ context.Context, v *view) (bool, error) {
		if err := degraded(v); err != nil {
			return false, err
		}
		return allUpdated(v, started, rendered), nil
	}); err != nil {
		return err
	}
	if err := r.checkNodes(ctx, started, rendered); err != nil {
		return fmt.Errorf("canary check: %w", err)
	}
	r.w.log.printf("canary: %v healthy on %s; resuming pool %s", started, rendered, r.cfg.Pool)
	return r.afterCanary(ctx)
}

// afterCanary puts maxUnavailable back to the user's override, or the
// pool's own, and unpauses.
func (r *roller) afterCanary(ctx context.Context) error {
	if r.cfg.MaxUnavailable != nil {
		pool := &mcfgv1.MachineConfigPool{}
		if err := r.cfg.Client.Get(ctx, client.ObjectKey{Name: r.cfg.Pool}, pool); err != nil {
			return fmt.Errorf("reading MachineConfigPool %s: %w", r.cfg.Pool, err)
		}
		if err := overrideMaxUnavailable(ctx, r.cfg.Client, pool, *r.cfg.MaxUnavailable); err != nil {
			return err
		}
	} else if err := restoreMaxUnavailable(ctx, r.cfg.Client, r.cfg.Pool); err != nil {
		return err
	}
	return setPaused(ctx, r.cfg.Client, r.cfg.Pool, false)
}

// nodesTargeting lists nodes whose MachineConfigNode wants the rendered config.
func nodesTargeting(v *view, rendered string) []string {
	var out []string
	for _, mcn := range v.tracker.Nodes() {
		if mcn.Spec.ConfigVersion.Desired == rendered {
			out = append(out, mcn.Name)
		}
	}
	return out
}

func allUpdated(v *view, nodes []string, rendered string) bool {
	byName := map[string]*mcfgv1.MachineConfigNode{}
	for _, mcn := range v.tracker.Nodes() {
		byName[mcn.Name] = mcn
	}
	for _, n := range nodes {
		mcn := byName[n]
		if mcn == nil || mcn.Status.ConfigVersion == nil || mcn.Status.ConfigVersion.Current != rendered ||
			conditionStatus(mcn, string(mcfgv1.MachineConfigNodeUpdated)) != string(metav1.ConditionTrue) {
			return false
		}
	}
	return true
}

// checkNodes: each canary node is Ready, schedulable, MCO reports it Done
// on the rendered config, and it runs the image (currentImage, where set).
func (r *roller) checkNodes(ctx context.Context, nodes []string, rendered string) error {
	var errs []error
	for _, n := range nodes {
		node := &corev1.Node{}
		if err := r.cfg.Client.Get(ctx, client.ObjectKey{Name: n}, node); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", n, err))
			continue
		}
		if !nodeReady(node) {
			errs = append(errs, fmt.Errorf("node %s: Ready is not True", n))
		}
		if node.Spec.Unschedulable {
			errs = append(errs, fmt.Errorf("node %s: still cordoned", n))
		}
		if got := node.Annotations[CurrentConfigAnnot]; got != rendered {
			errs = append(errs, fmt.Errorf("node %s: annotation %s is %q, want %q", n, CurrentConfigAnnot, got, rendered))
		}
		if got, ok := node.Annotations[CurrentImageAnnot]; ok && got != r.cfg.Image {
			errs = append(errs, fmt.Errorf("node %s: annotation %s is %q, want %q", n, CurrentImageAnnot, got, r.cfg.Image))
		}
		if got := node.Annotations[StateAnnot]; got != StateDone {
			errs = append(errs, fmt.Errorf("node %s: annotation %s is %q, want %q", n, StateAnnot, got, StateDone))
		}
	}
	return errors.Join(errs...)
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
