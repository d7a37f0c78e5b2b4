package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
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
	for i := range mcns.Items {
		w.observeNode(&mcns.Items[i])
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

// loop applies events until cond is done (true), a watch closes (false,
// nil), or it fails.
func (w *watcher) loop(ctx context.Context, poolW, mcnW watch.Interface, cond condition) (bool, error) {
	for {
		if done, err := cond(ctx, &w.v); done || err != nil {
			return done, err
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-poolW.ResultChan():
			if !ok {
				return false, nil
			}
			if p, isPool := ev.Object.(*mcfgv1.MachineConfigPool); isPool && ev.Type != watch.Deleted {
				w.v.pool = p
			}
		case ev, ok := <-mcnW.ResultChan():
			if !ok {
				return false, nil
			}
			if mcn, isMCN := ev.Object.(*mcfgv1.MachineConfigNode); isMCN && ev.Type != watch.Deleted {
				w.observeNode(mcn)
			}
		}
	}
}

// observeNode records a node of this pool and logs its phase changes.
func (w *watcher) observeNode(mcn *mcfgv1.MachineConfigNode) {
	if mcn.Spec.Pool.Name != w.pool {
		return
	}
	if evs, first := w.v.tracker.Observe(mcn); !first && len(evs) > 0 {
		w.log.transitions(evs)
		w.log.table(w.v.tracker, false)
	}
}
