package trigger

import (
	"context"
	"errors"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// reconcileBootImages starts the standalone bootimages pipeline when the
// boot image stream (or managedBootImages) changed alone. When a payload
// upgrade changes the OS image too, the boot-image pools' node-image runs
// end with the bootimages stage, and this stays out of their way.
//
// "Alone" is decided after --max-settle, not --settle: an upgrade's CVO
// writes coreos-bootimages and the OS image ConfigMap as separate objects,
// seconds apart on a busy apiserver, and the boot image stream often comes
// first. Only scale-ups read a MachineSet's boot image, so the wait costs
// nothing a user sees, where taking the first write as "alone" would start
// a second writer of MachineSets next to the upgrade's run.
func (c *Controller) reconcileBootImages(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if w := c.settle.waitQuiet(bootImagesKey.Name, max(c.MaxSettle, c.Settle)); w > 0 {
		return reconcile.Result{RequeueAfter: w}, nil
	}
	sum, err := c.bootImagesDigest(ctx)
	if err != nil || sum == "" {
		return reconcile.Result{}, err
	}
	// Every run event of every pool comes here, and the stream is nearly
	// always taken care of: the cache's runs say so without a round trip.
	// They may be a watch event behind, which only matters for a create,
	// so that is decided on a live list.
	for _, r := range []client.Reader{c.Client, c.APIReader} {
		var list pipelinev1.PipelineRunList
		if err := r.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels{LabelRunsManagedBy: ManagedBy}); err != nil {
			return reconcile.Result{}, fmt.Errorf("listing PipelineRuns: %w", err)
		}
		if bootImagesHandled(list.Items, sum) {
			return reconcile.Result{}, nil
		}
	}
	var w world
	if err := c.loadConfig(ctx, &w); err != nil {
		log.FromContext(ctx).Info("no standalone bootimages run", "error", err.Error())
		return reconcile.Result{}, nil
	}
	coming, err := c.nodeImageRunComing(ctx, w.config)
	if err != nil || coming {
		return reconcile.Result{RequeueAfter: 2 * max(c.Settle, 1)}, err
	}
	p, _, err := c.loadPipeline(ctx, w.config.BootImagesPipeline)
	if err != nil {
		log.FromContext(ctx).Info("no standalone bootimages run", "error", err.Error())
		return reconcile.Result{}, nil
	}
	if w.config.Cluster, err = c.clusterRun(ctx, p); err != nil {
		return reconcile.Result{}, err
	}
	pr := BuildBootImagesRun(w.config, c.Namespace, sum, pipelineTasks(p))
	if err := validateRun(ctx, pr); err != nil {
		return reconcile.Result{}, err
	}
	if err := c.Client.Create(ctx, pr); err != nil && !apierrors.IsAlreadyExists(err) {
		return reconcile.Result{}, fmt.Errorf("creating PipelineRun %s: %w", pr.Name, err)
	} else if err == nil {
		metricCreated.WithLabelValues("", TriggerPayload).Inc()
		log.FromContext(ctx).Info("created standalone bootimages run", "run", pr.Name)
	}
	return reconcile.Result{}, nil
}

// bootImagesHandled: a run was made for boot image stream sum (done, or
// under way), or another bootimages run is under way: one writer of
// MachineSets at a time, and its end requeues the reconcile.
func bootImagesHandled(runs []pipelinev1.PipelineRun, sum string) bool {
	for i := range runs {
		boot := runs[i].Annotations[AnnotBootImages]
		if boot == sum || (boot != "" && stateOf(&runs[i]) != runDone) {
			return true
		}
	}
	return false
}

// nodeImageRunComing: some enabled boot-image pool has inputs no run
// exists for yet, so its node-image run, bootimages stage included, is
// about to be made (the payload changed the OS image as well).
func (c *Controller) nodeImageRunComing(ctx context.Context, cfg Config) (bool, error) {
	var pools mcfgv1.MachineConfigPoolList
	if err := c.Client.List(ctx, &pools, client.MatchingLabels{LabelEnabled: "true"}); err != nil {
		return false, err
	}
	for i := range pools.Items {
		p := &pools.Items[i]
		if !cfg.UpdatesBootImages(p.Name) {
			continue
		}
		var w world
		if err := c.loadConfig(ctx, &w); err != nil {
			return false, err
		}
		err := c.loadInputs(ctx, p, &w)
		var e *Error
		if errors.As(err, &e) {
			continue // that pool makes no run; its events say why
		}
		if err != nil {
			return false, err
		}
		var runs pipelinev1.PipelineRunList
		err = c.APIReader.List(ctx, &runs, client.InNamespace(c.Namespace), client.Limit(1), client.MatchingLabels{
			LabelRunsManagedBy: ManagedBy, LabelPool: p.Name, LabelFingerprint: w.fp.Sum, LabelPipeline: pipelineNodeImage})
		if err != nil {
			return false, fmt.Errorf("listing PipelineRuns of pool %q: %w", p.Name, err)
		}
		if len(runs.Items) == 0 {
			return true, nil
		}
	}
	return false, nil
}
