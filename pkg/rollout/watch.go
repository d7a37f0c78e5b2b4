package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// view is what the rollout knows of the cluster: the pool and the
// MachineConfigNodes of its nodes, kept current by watches.
type view struct {
	pool    *mcfgv1.MachineConfigPool
	tracker *Tracker
}

// condition inspects the view after every change: done ends the wait, an
// error fails it.
type condition func(ctx context.Context, v *view) (done bool, err error)

// errWaitTimeout is wrapped when ctx ends before the condition holds.
var errWaitTimeout = errors.New("timed out")

// watcher follows one pool. It watches (never polls) the pool and the
// MachineConfigNodes, re-listing when a watch closes so no event is lost.
type watcher struct {
	c    client.WithWatch
	pool string
	log  *progressLog
	v    view
}

func newWatcher(c client.WithWatch, pool string, out io.Writer) *watcher {
	return &watcher{c: c, pool: pool, log: newProgressLog(out), v: view{tracker: NewTracker()}}
}

// waitFor blocks until cond is done or fails, or ctx ends.
func (w *watcher) waitFor(ctx context.Context, what string, cond condition) error {
	for {
		poolW, mcnW, err := w.resync(ctx)
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("waiting for %s: %w", what, errWaitTimeout)
		}
		if err != nil {
			return err
		}
		done, err := w.loop(ctx, poolW, mcnW, cond)
		poolW.Stop()
		mcnW.Stop()
		switch {
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("waiting for %s: %w", what, errWaitTimeout)
		case err != nil:
			return err
		case done:
			return nil
		}
		// A watch closed: list again and continue from there.
	}
}

// resync lists the pool and its nodes, then starts watches from the listed
// resourceVersions.
func (w *watcher) resync(ctx context.Context) (watch.Interface, watch.Interface, error) {
	pools := &mcfgv1.MachineConfigPoolList{}
	if err := w.c.List(ctx, pools, client.MatchingFields{"metadata.name": w.pool}); err != nil {
		return nil, nil, fmt.Errorf("listing MachineConfigPool %s: %w", w.pool, err)
	}
	if len(pools.Items) == 0 {
		return nil, nil, fmt.Errorf("MachineConfigPool %s not found", w.pool)
	}
	w.v.pool = &pools.Items[0]
	mcns := &mcfgv1.MachineConfigNodeList{}
	if err := w.c.List(ctx, mcns); err != nil {
		return nil, nil, fmt.Errorf("listing MachineConfigNodes: %w", err)
	}
	listed := map[string]bool{}
	for i := range mcns.Items {
		listed[mcns.Items[i].Name] = true
		w.observeNode(&mcns.Items[i])
	}
	for _, mcn := range w.v.tracker.Nodes() {
		if !listed[mcn.Name] {
			w.v.tracker.Forget(mcn.Name) // deleted while no watch ran
		}
	}
	w.log.table(w.v.tracker, false)
	poolW, err := w.c.Watch(ctx, &mcfgv1.MachineConfigPoolList{}, client.MatchingFields{"metadata.name": w.pool},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: pools.ResourceVersion}})
	if err != nil {
		return nil, nil, fmt.Errorf("watching MachineConfigPool %s: %w", w.pool, err)
	}
	mcnW, err := w.c.Watch(ctx, &mcfgv1.MachineConfigNodeList{},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: mcns.ResourceVersion}})
	if err != nil {
		poolW.Stop()
		return nil, nil, fmt.Errorf("watching MachineConfigNodes: %w", err)
	}
	return poolW, mcnW, nil
}

// loop applies events until cond is done (true), a watch closes or
// expires (false, nil), or it fails.
func (w *watcher) loop(ctx context.Context, poolW, mcnW watch.Interface, cond condition) (bool, error) {
	for {
		if done, err := cond(ctx, &w.v); done || err != nil {
			return done, err
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-poolW.ResultChan():
			if relist, err := watchEnded(ev, ok, "MachineConfigPool "+w.pool); relist || err != nil {
				return false, err
			}
			if p, isPool := ev.Object.(*mcfgv1.MachineConfigPool); isPool && ev.Type != watch.Deleted {
				w.v.pool = p
			}
		case ev, ok := <-mcnW.ResultChan():
			if relist, err := watchEnded(ev, ok, "MachineConfigNodes"); relist || err != nil {
				return false, err
			}
			mcn, isMCN := ev.Object.(*mcfgv1.MachineConfigNode)
			switch {
			case !isMCN:
			case ev.Type == watch.Deleted:
				w.forgetNode(mcn.Name)
			default:
				w.observeNode(mcn)
			}
		}
	}
}

// watchEnded says whether a watch event ends the watch: a closed channel
// or a 410 (the resourceVersion was compacted away: only a new list
// continues) is a relist; any other error event fails the wait, naming
// what was watched. The watch.Interface contract does not promise the
// channel closes after an error, so the error itself must end the loop.
// https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes
func watchEnded(ev watch.Event, ok bool, what string) (relist bool, err error) {
	if !ok {
		return true, nil
	}
	if ev.Type != watch.Error {
		return false, nil
	}
	err = apierrors.FromObject(ev.Object)
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return true, nil
	}
	return false, fmt.Errorf("watching %s: %w", what, err)
}

// forgetNode stops tracking a deleted node: the pool no longer counts it,
// so no wait may wait for it.
func (w *watcher) forgetNode(name string) {
	if w.v.tracker.Forget(name) {
		w.log.printf("node %s: MachineConfigNode deleted; no longer tracked", name)
		w.log.table(w.v.tracker, false)
	}
}

// Forget drops a node's MachineConfigNode (its transitions stay in the
// timeline) and reports whether it was tracked.
func (t *Tracker) Forget(name string) bool {
	_, ok := t.nodes[name]
	delete(t.nodes, name)
	return ok
}

// observeNode records a node of this pool and logs its phase changes.
func (w *watcher) observeNode(mcn *mcfgv1.MachineConfigNode) {
	if mcn.Spec.Pool.Name != w.pool {
		w.forgetNode(mcn.Name) // moved to another pool
		return
	}
	if evs, first := w.v.tracker.Observe(mcn); !first && len(evs) > 0 {
		w.log.transitions(evs)
		w.log.table(w.v.tracker, false)
	}
}
