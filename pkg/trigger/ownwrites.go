package trigger

import (
	"context"
	"fmt"
	"sync"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A pool's runs are read from the manager's cache when it has seen every
// write the trigger made to them, and from the apiserver otherwise. What
// must never happen is a decision on a list that misses the trigger's own
// last create or cancel: a second run for one pool, or a live run left
// uncancelled. The cache misses exactly those only for the moment between
// the write's answer and its watch event, so the trigger remembers each
// write's resourceVersion until the cache shows it, as client-go's
// controller expectations do for ReplicaSets
// (https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/controller_utils.go).
// Tekton's and users' changes reach the cache a watch event late, as they
// reach a live list a request late: neither read is ahead of the other.
// An edit's reconcile, and every reconcile its run events cause, then costs
// no list at all.

// runsKey is the runs of one pool and pipeline label (node-image runs,
// upgrade-ahead runs).
type runsKey struct{ pool, pipeline string }

// runWrite is the trigger's write to one run as the apiserver answered it.
type runWrite struct {
	uid     types.UID
	rv      string
	deleted bool
}

// ownWrites are the writes the cache may not have seen yet, per runsKey.
// A key is dirty after a write whose outcome is unknown (an error): only
// a live list clears it.
type ownWrites struct {
	mu    sync.Mutex
	m     map[runsKey]map[string]runWrite
	dirty map[runsKey]bool
}

func keyOf(r *pipelinev1.PipelineRun) runsKey {
	return runsKey{pool: r.Labels[LabelPool], pipeline: r.Labels[LabelPipeline]}
}

// note records a write's outcome: NotFound means the run is gone, as
// after a delete.
func (o *ownWrites) note(r *pipelinev1.PipelineRun, deleted bool, err error) {
	if apierrors.IsNotFound(err) {
		deleted, err = true, nil
	}
	o.wrote(r, deleted, err)
}

// wrote records a write to r (r as the apiserver returned it); err != nil
// leaves the key to a live list.
func (o *ownWrites) wrote(r *pipelinev1.PipelineRun, deleted bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := keyOf(r)
	if err != nil {
		if o.dirty == nil {
			o.dirty = map[runsKey]bool{}
		}
		o.dirty[k] = true
		return
	}
	if o.m == nil {
		o.m = map[runsKey]map[string]runWrite{}
	}
	if o.m[k] == nil {
		o.m[k] = map[string]runWrite{}
	}
	o.m[k][r.Name] = runWrite{uid: r.UID, rv: r.ResourceVersion, deleted: deleted}
}

// seen reports whether cached shows every write of k; the writes it
// shows are forgotten. A run of the written UID at another
// resourceVersion is not taken as seen: resourceVersions do not order,
// so the cache may be behind the write as well as past it.
func (o *ownWrites) seen(k runsKey, cached []*pipelinev1.PipelineRun) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dirty[k] {
		return false
	}
	byName := map[string]*pipelinev1.PipelineRun{}
	for _, r := range cached {
		byName[r.Name] = r
	}
	all := true
	for name, w := range o.m[k] {
		r := byName[name]
		var ok bool
		if w.deleted {
			ok = r == nil || r.UID != w.uid
		} else {
			ok = r != nil && r.UID == w.uid && r.ResourceVersion == w.rv
		}
		if ok {
			delete(o.m[k], name)
		}
		all = all && ok
	}
	return all
}

// listed forgets k's writes: a live list made after them shows them all.
// Only k's pool reconcile writes k's runs, and controller-runtime never
// runs two of one pool at once, so no write of k falls between the list
// and this.
func (o *ownWrites) listed(k runsKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, k)
	delete(o.dirty, k)
}

// listRuns lists pool's runs of pipeline label pipeline, newest first:
// from the cache when it has seen the trigger's writes to them, else from
// the apiserver.
func (c *Controller) listRuns(ctx context.Context, pool, pipeline string) ([]*pipelinev1.PipelineRun, error) {
	return c.listRunsFrom(ctx, c.Client, pool, pipeline)
}

// listRunsFrom is listRuns with cache as the cache.
func (c *Controller) listRunsFrom(ctx context.Context, cache client.Reader, pool, pipeline string) ([]*pipelinev1.PipelineRun, error) {
	k := runsKey{pool: pool, pipeline: pipeline}
	sel := client.MatchingLabels{LabelRunsManagedBy: ManagedBy, LabelPool: pool, LabelPipeline: pipeline}
	var list pipelinev1.PipelineRunList
	if err := cache.List(ctx, &list, client.InNamespace(c.Namespace), sel); err != nil {
		return nil, fmt.Errorf("listing PipelineRuns of pool %q: %w", pool, err)
	}
	out := runPointers(list.Items)
	if c.writes.seen(k, out) {
		newestFirst(out)
		return out, nil
	}
	list = pipelinev1.PipelineRunList{}
	if err := c.APIReader.List(ctx, &list, client.InNamespace(c.Namespace), sel); err != nil {
		return nil, fmt.Errorf("listing PipelineRuns of pool %q: %w", pool, err)
	}
	c.writes.listed(k)
	out = runPointers(list.Items)
	newestFirst(out)
	return out, nil
}

func runPointers(items []pipelinev1.PipelineRun) []*pipelinev1.PipelineRun {
	out := make([]*pipelinev1.PipelineRun, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
