package trigger

import (
	"context"
	"maps"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/payload"
)

// Labels on MachineConfigPools.
const (
	// LabelEnabled opts a pool in; removing it reverts the pool to the
	// payload's OS (the CoreOS layering enhancement's "Reverting to Standard OS").
	LabelEnabled = "kiln.dev/enabled"
	// LabelWave orders pools: a pool of a higher wave starts only after
	// every enabled pool of a lower wave succeeded on the same payload.
	LabelWave = "kiln.dev/wave"
)

// BootImagesConfigMap is the payload's boot image stream (the boot image enhancement).
const BootImagesConfigMap = "coreos-bootimages"

// poolWorkers is how many pools reconcile at once.
const poolWorkers = 4

// Controller starts node-image runs per pool and standalone bootimages
// runs. Reads of objects come from the cache; a pool's PipelineRuns too,
// once the cache has seen the trigger's own writes to them, and live
// (APIReader) until then (ownwrites.go), so decisions never rest on a
// list that misses the trigger's last create or cancel.
type Controller struct {
	Client    client.Client
	APIReader client.Reader
	Namespace string
	Recorder  record.EventRecorder
	// Resolve pins a payload image tag by digest; references that carry a
	// digest are used as they are.
	Resolve func(ctx context.Context, ref string) (string, error)
	// OSVersion reads the payload OS image's version label, for the KMM day-0
	// proposal's upgrade rebuild; nil disables that check.
	OSVersion func(ctx context.Context, ref string) (string, error)
	// Settle and MaxSettle coalesce bursts of edits (see settler).
	Settle, MaxSettle time.Duration
	// Insecure lists registries (host[:port]) the runs reach over plain
	// HTTP, on top of the image config's (registries.go).
	Insecure []string

	hasher       SpecHasher
	mcIndexed    bool // Client serves mcLabelIndex (SetupWithManager)
	settle       *settler
	ready        readyReleases   // kiln_upgrade_ready series per pool
	payloads     releasePayloads // upgrade targets' payload facts
	writes       ownWrites       // run writes the cache may not show yet
	registriesMu sync.Mutex
}

// bootImagesKey is the one request of the standalone bootimages reconciler.
var bootImagesKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "\x00bootimages"}}

// SetupWithManager registers the pool and bootimages reconcilers.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	c.settle = newSettler(c.Settle, max(c.MaxSettle, c.Settle), nil)
	if c.Resolve == nil {
		c.Resolve = c.resolve
	}
	if err := indexMachineConfigs(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	c.mcIndexed = true
	specOrMeta := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))
	inNS := func(ns string, names ...string) builder.Predicates {
		return builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			if o.GetNamespace() != ns {
				return false
			}
			for _, n := range names {
				if o.GetName() == n {
					return true
				}
			}
			return false
		}))
	}
	// Pools reconcile in parallel: one edit's reconcile mostly waits on the
	// apiserver, and the run events of the previous edit (create, cancel)
	// requeue their pool, which must not hold up the next pool's edit.
	// controller-runtime never runs one pool's key twice at once, which is
	// what one active run per pool rests on; the reconciler's shared state
	// (settler, hasher, registries) has its own locks.
	err := ctrl.NewControllerManagedBy(mgr).Named("kiln-pools").
		WithOptions(controller.Options{MaxConcurrentReconciles: poolWorkers}).
		Watches(&mcfgv1.MachineConfigPool{}, c.inputs(c.poolOf), specOrMeta).
		Watches(&mcfgv1.MachineConfig{}, c.inputs(c.poolsSelecting), specOrMeta).
		Watches(&kmmv1beta1.ModuleDay0{}, c.inputs(c.allPools), specOrMeta).
		Watches(&corev1.ConfigMap{}, c.inputs(c.allPools), inNS(payload.Namespace, payload.OSImageURLMap)).
		Watches(&corev1.ConfigMap{}, c.inputs(c.allPools), inNS(c.Namespace, ConfigName)).
		Watches(&configv1.ClusterVersion{}, c.inputs(c.allPools), builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}, offersChanged))).
		Watches(&pipelinev1.Pipeline{}, c.inputs(c.allPools), specOrMeta).
		Watches(&pipelinev1.PipelineRun{}, handler.EnqueueRequestsFromMapFunc(c.poolsAfterRun)).
		Complete(reconcile.Func(c.reconcilePool))
	if err != nil {
		return err
	}
	err = ctrl.NewControllerManagedBy(mgr).Named("kiln-bootimages").
		Watches(&corev1.ConfigMap{}, c.inputs(bootImagesOnly), inNS(payload.Namespace, BootImagesConfigMap)).
		Watches(&operatorv1.MachineConfiguration{}, c.inputs(bootImagesOnly), specOrMeta).
		Watches(&pipelinev1.PipelineRun{}, handler.EnqueueRequestsFromMapFunc(bootImagesOnly)).
		Complete(reconcile.Func(c.reconcileBootImages))
	if err != nil {
		return err
	}
	// The scheduled prune (prune.go): kiln-config sets it, a run's
	// progress may let a postponed one start.
	err = ctrl.NewControllerManagedBy(mgr).Named("kiln-prune").
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(pruneOnly), inNS(c.Namespace, ConfigName)).
		Watches(&pipelinev1.PipelineRun{}, handler.EnqueueRequestsFromMapFunc(pruneOnly)).
		Complete(reconcile.Func(c.reconcilePrune))
	if err != nil {
		return err
	}
	return c.setupRegistries(mgr)
}

type mapFunc = handler.MapFunc

// inputs enqueues what m maps an input change to, after the settle
// window, and starts (or extends) each key's burst.
func (c *Controller) inputs(m mapFunc) handler.EventHandler {
	add := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, r := range m(ctx, o) {
			c.settle.touch(r.Name)
			q.AddAfter(r, c.Settle)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// A label change can move an MC from one pool to another.
			if !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) {
				add(ctx, e.ObjectOld, q)
			}
			add(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if mc, ok := e.Object.(*mcfgv1.MachineConfig); ok {
				c.hasher.Forget(mc.UID)
			}
			add(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
	}
}

func bootImagesOnly(context.Context, client.Object) []reconcile.Request {
	return []reconcile.Request{bootImagesKey}
}

func poolRequest(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
}

func (c *Controller) poolOf(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{poolRequest(o.GetName())}
}

func (c *Controller) allPools(ctx context.Context, _ client.Object) []reconcile.Request {
	var pools mcfgv1.MachineConfigPoolList
	if err := c.Client.List(ctx, &pools); err != nil {
		log.FromContext(ctx).Error(err, "listing MachineConfigPools")
		return nil
	}
	out := make([]reconcile.Request, 0, len(pools.Items))
	for i := range pools.Items {
		out = append(out, poolRequest(pools.Items[i].Name))
	}
	return out
}

// poolsSelecting maps an MC to the pools whose selector matches it; kiln's
// own MC (kiln.dev/managed) maps to its pool for the revert check.
func (c *Controller) poolsSelecting(ctx context.Context, o client.Object) []reconcile.Request {
	var pools mcfgv1.MachineConfigPoolList
	if err := c.Client.List(ctx, &pools, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing MachineConfigPools")
		return nil
	}
	var out []reconcile.Request
	for i := range pools.Items {
		p := &pools.Items[i]
		sel, err := selectorOf(p)
		if err == nil && sel.Matches(labels.Set(o.GetLabels())) {
			out = append(out, poolRequest(p.Name))
		}
	}
	return out
}

// poolsAfterRun: a run's progress matters to its own pool (queue, revert)
// and to pools of later waves.
func (c *Controller) poolsAfterRun(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetLabels()[LabelRunsManagedBy] != ManagedBy {
		return nil
	}
	var out []reconcile.Request
	if p := o.GetLabels()[LabelPool]; p != "" {
		out = append(out, poolRequest(p))
	}
	var pools mcfgv1.MachineConfigPoolList
	if err := c.Client.List(ctx, &pools, client.HasLabels{LabelWave}); err == nil {
		for i := range pools.Items {
			out = append(out, poolRequest(pools.Items[i].Name))
		}
	}
	return out
}
