package moduleday0

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
)

// Labels of the day-0 proposal and kiln's bookkeeping.
const (
	// KMMManagedLabel on a MachineConfig hands its day-0 kmods to kiln.
	KMMManagedLabel = "machineconfiguration.openshift.io/kmm-managed"
	// SourceMCLabel on a ModuleDay0 names the MachineConfig it came from.
	SourceMCLabel = "kiln.dev/machineconfig"
	roleLabel     = "machineconfiguration.openshift.io/role"
	nodeRolePfx   = "node-role.kubernetes.io/"
)

// Condition reasons set by the sync.
const (
	ReasonSynced      = "Synced"
	ReasonConflict    = "ConflictingModuleDay0"
	ReasonNoPool      = "NoMatchingPool"
	ReasonImageAbsent = "ImageNotFound"
	ReasonApplied     = "Applied"
	ReasonNodesBehind = "NodesNotOnImage"
)

// ImageChecker reports whether an image exists in its registry; the day-0
// proposal modifies a node only once the image exists.
type ImageChecker func(ctx context.Context, ref string) (bool, error)

// Sync keeps ModuleDay0 objects in step with kmm-managed MachineConfigs
// (the day-0 proposal's "Setting up the integration") and applies a ModuleDay0's image
// to its pool's MachineConfig when the nodes do not run its OS ("Modifying
// day-0 kmods"). cmd/kiln-trigger registers it with its manager.
type Sync struct {
	Client    client.Client
	Namespace string
	Recorder  record.EventRecorder
	Exists    ImageChecker
	// Recheck is how soon to look again for an image that does not exist
	// yet (default one minute): a registry push sends no event.
	Recheck time.Duration
}

// syncKey is the one request every change maps to: the sync looks at all
// kmm-managed MCs, ModuleDay0s and pools together, because a conflict is a
// property of the set, not of one object. Clusters hold few of each.
var syncKey = ctrl.Request{NamespacedName: types.NamespacedName{Name: "kmm-day0"}}

// SetupWithManager registers the sync.
func (s *Sync) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []ctrl.Request { return []ctrl.Request{syncKey} })
	return ctrl.NewControllerManagedBy(mgr).Named("kmm-day0-sync").
		Watches(&mcfgv1.MachineConfig{}, all, builder.WithPredicates(kmmManaged)).
		Watches(&kmmv1beta1.ModuleDay0{}, all).
		Watches(&mcfgv1.MachineConfigPool{}, all).
		Watches(&corev1.Node{}, all).
		Complete(s)
}

// kmmManaged passes the events of MCs that are, or were, kmm-managed: the
// sync reads no other MC, and a cluster's thousands of other MCs must not
// wake it on every edit.
var kmmManaged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return isKMMManaged(e.Object) },
	UpdateFunc:  func(e event.UpdateEvent) bool { return isKMMManaged(e.ObjectOld) || isKMMManaged(e.ObjectNew) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return isKMMManaged(e.Object) },
	GenericFunc: func(e event.GenericEvent) bool { return isKMMManaged(e.Object) },
}

func isKMMManaged(o client.Object) bool { return o.GetLabels()[KMMManagedLabel] == "true" }

// SyncError carries the reason of a failed sub-reconcile, as flux does.
type SyncError struct {
	Reason string
	Err    error
}

func (e *SyncError) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *SyncError) Unwrap() error { return e.Err }

// Reconcile runs the sub-reconcilers in order; a failed one stops the rest.
func (s *Sync) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	st, err := s.load(ctx)
	if err != nil {
		return ctrl.Result{}, &SyncError{Reason: "Load", Err: err}
	}
	for _, sub := range []struct {
		reason string
		fn     func(context.Context, *state) error
	}{
		{"SyncModules", s.syncModules},
		{"Conflicts", s.markConflicts},
		{"Apply", s.applyImages},
	} {
		if err := sub.fn(ctx, st); err != nil {
			return ctrl.Result{}, &SyncError{Reason: sub.reason, Err: err}
		}
	}
	if st.waitingForImage {
		return ctrl.Result{RequeueAfter: cmp.Or(s.Recheck, time.Minute)}, nil
	}
	return ctrl.Result{}, nil
}

// state is one consistent read of everything the sync looks at.
type state struct {
	mcs     []mcfgv1.MachineConfig
	modules []kmmv1beta1.ModuleDay0
	pools   []mcfgv1.MachineConfigPool
	nodes   []corev1.Node
	// waitingForImage: some ModuleDay0's image does not exist yet.
	waitingForImage bool
}

func (s *Sync) load(ctx context.Context) (*state, error) {
	st := &state{}
	mcs := &mcfgv1.MachineConfigList{}
	mods := &kmmv1beta1.ModuleDay0List{}
	pools := &mcfgv1.MachineConfigPoolList{}
	nodes := &corev1.NodeList{}
	// Only kmm-managed MCs: the cache filters them without copying the
	// others. These few are deep copies, as pointMC patches one.
	if err := s.Client.List(ctx, mcs, client.MatchingLabels{KMMManagedLabel: "true"}); err != nil {
		return nil, err
	}
	for _, l := range []client.ObjectList{pools, nodes} {
		if err := s.Client.List(ctx, l); err != nil {
			return nil, err
		}
	}
	if err := s.Client.List(ctx, mods, client.InNamespace(s.Namespace)); err != nil {
		return nil, err
	}
	st.mcs, st.modules, st.pools, st.nodes = mcs.Items, mods.Items, pools.Items, nodes.Items
	return st, nil
}

// syncModules creates a ModuleDay0 for each kmm-managed MC and deletes the
// ModuleDay0 of an MC that lost the label (or is gone). An existing
// ModuleDay0's spec is the user's from then on (the day-0 proposal) and is not
// overwritten.
func (s *Sync) syncModules(ctx context.Context, st *state) error {
	managed := map[string]*mcfgv1.MachineConfig{}
	for i := range st.mcs {
		if st.mcs[i].Labels[KMMManagedLabel] == "true" {
			managed[st.mcs[i].Name] = &st.mcs[i]
		}
	}
	have := map[string]bool{}
	var errs []error
	for i := range st.modules {
		md := &st.modules[i]
		src, ours := md.Labels[SourceMCLabel]
		if !ours {
			continue
		}
		have[src] = true
		if managed[src] == nil {
			if err := s.Client.Delete(ctx, md); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err))
			}
		}
	}
	for name, mc := range managed {
		if have[name] {
			continue
		}
		md, err := moduleFor(mc, s.Namespace)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := s.Client.Create(ctx, md); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("creating ModuleDay0 for MachineConfig %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// moduleFor builds the ModuleDay0 the day-0 proposal derives from an MC.
func moduleFor(mc *mcfgv1.MachineConfig, ns string) (*kmmv1beta1.ModuleDay0, error) {
	role := mc.Labels[roleLabel]
	switch {
	case role == "":
		return nil, fmt.Errorf("MachineConfig %s: label %s is required to find the pool", mc.Name, roleLabel)
	case mc.Spec.OSImageURL == "":
		return nil, fmt.Errorf("MachineConfig %s: spec.osImageURL is empty; a kmm-managed MachineConfig names the day-0 image", mc.Name)
	}
	return &kmmv1beta1.ModuleDay0{
		ObjectMeta: metav1.ObjectMeta{
			Name: mc.Name, Namespace: ns,
			Labels: map[string]string{SourceMCLabel: mc.Name},
		},
		Spec: kmmv1beta1.ModuleDay0Spec{
			OSMapping:                 kmmv1beta1.OSMapping{ContainerImage: mc.Spec.OSImageURL},
			MachineConfigPoolSelector: map[string]string{nodeRolePfx + role: ""},
		},
	}, nil
}

// poolsOf lists the pools whose node selector carries every label of the
// ModuleDay0's machineConfigPoolSelector.
func poolsOf(md *kmmv1beta1.ModuleDay0, pools []mcfgv1.MachineConfigPool) []*mcfgv1.MachineConfigPool {
	var out []*mcfgv1.MachineConfigPool
	for i := range pools {
		p := &pools[i]
		if p.Spec.NodeSelector == nil {
			continue
		}
		if labels.SelectorFromSet(md.Spec.MachineConfigPoolSelector).Matches(labels.Set(p.Spec.NodeSelector.MatchLabels)) {
			out = append(out, p)
		}
	}
	return out
}

// markConflicts refuses every ModuleDay0 that shares a pool with another
// (the day-0 proposal: no more than one per pool), with a condition and an event
// naming both, and marks the others Synced.
func (s *Sync) markConflicts(ctx context.Context, st *state) error {
	byPool := map[string][]string{}
	for i := range st.modules {
		for _, p := range poolsOf(&st.modules[i], st.pools) {
			byPool[p.Name] = append(byPool[p.Name], st.modules[i].Name)
		}
	}
	var errs []error
	for i := range st.modules {
		md := &st.modules[i]
		cond := metav1.Condition{Type: kmmv1beta1.ConditionSynced, Status: metav1.ConditionTrue, Reason: ReasonSynced, Message: "ModuleDay0 is the only one for its pool"}
		pools := poolsOf(md, st.pools)
		if len(pools) == 0 {
			cond = metav1.Condition{Type: kmmv1beta1.ConditionSynced, Status: metav1.ConditionFalse, Reason: ReasonNoPool,
				Message: fmt.Sprintf("no MachineConfigPool has a nodeSelector with %v", md.Spec.MachineConfigPoolSelector)}
		}
		for _, p := range pools {
			if names := byPool[p.Name]; len(names) > 1 {
				sort.Strings(names)
				cond = metav1.Condition{Type: kmmv1beta1.ConditionSynced, Status: metav1.ConditionFalse, Reason: ReasonConflict,
					Message: fmt.Sprintf("ModuleDay0s %s all select MachineConfigPool %s; the KMM day-0 proposal allows one per pool: remove all but one", strings.Join(names, ", "), p.Name)}
				if s.Recorder != nil && !conditionIs(md, cond) {
					s.Recorder.Event(md, corev1.EventTypeWarning, ReasonConflict, cond.Message)
				}
			}
		}
		errs = append(errs, s.setCondition(ctx, md, cond))
	}
	return errors.Join(errs...)
}

func conditionIs(md *kmmv1beta1.ModuleDay0, c metav1.Condition) bool {
	cur := meta.FindStatusCondition(md.Status.Conditions, c.Type)
	return cur != nil && cur.Status == c.Status && cur.Reason == c.Reason && cur.Message == c.Message
}

func (s *Sync) setCondition(ctx context.Context, md *kmmv1beta1.ModuleDay0, c metav1.Condition) error {
	if conditionIs(md, c) && md.Status.ObservedGeneration == md.Generation {
		return nil
	}
	c.ObservedGeneration = md.Generation
	meta.SetStatusCondition(&md.Status.Conditions, c)
	md.Status.ObservedGeneration = md.Generation
	if err := s.Client.Status().Update(ctx, md); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("updating status of ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	return nil
}
