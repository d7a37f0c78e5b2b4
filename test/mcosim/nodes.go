package mcosim

import (
	"context"
	"errors"
	"fmt"
	"sort"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MCO's node annotations.
const (
	CurrentConfigAnnot = "machineconfiguration.openshift.io/currentConfig"
	DesiredConfigAnnot = "machineconfiguration.openshift.io/desiredConfig"
	CurrentImageAnnot  = "machineconfiguration.openshift.io/currentImage"
	DesiredImageAnnot  = "machineconfiguration.openshift.io/desiredImage"
	StateAnnot         = "machineconfiguration.openshift.io/state"
	ReasonAnnot        = "machineconfiguration.openshift.io/reason"
	StateDone          = "Done"
	StateWorking       = "Working"
	StateDegraded      = "Degraded"
)

// syncNodes plays the node controller and every node's daemon for a pool,
// then writes the pool status.
func (s *Sim) syncNodes(ctx context.Context, pool *mcfgv1.MachineConfigPool) error {
	target := pool.Spec.Configuration.Name
	sel, err := nodeSelector(pool)
	if err != nil || target == "" {
		return err
	}
	list := &corev1.NodeList{}
	if err := s.o.Client.List(ctx, list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return err
	}
	nodes := list.Items
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	var errs []error
	for i := range nodes {
		errs = append(errs, s.bootstrap(ctx, pool, &nodes[i], target))
	}
	if !pool.Spec.Paused {
		errs = append(errs, s.target(ctx, pool, nodes, target))
	}
	for i := range nodes {
		errs = append(errs, s.daemonFor(nodes[i].Name).step(ctx, s, &nodes[i]))
	}
	errs = append(errs, s.poolStatus(ctx, pool, nodes, target))
	return errors.Join(errs...)
}

// bootstrap gives a new node the pool's config, as installation does, and
// its MachineConfigNode.
func (s *Sim) bootstrap(ctx context.Context, pool *mcfgv1.MachineConfigPool, n *corev1.Node, target string) error {
	if _, ok := n.Annotations[CurrentConfigAnnot]; !ok {
		base := n.DeepCopy()
		img := s.imageOf(ctx, target)
		n.Annotations = mergeMaps(n.Annotations, map[string]string{
			CurrentConfigAnnot: target, DesiredConfigAnnot: target, StateAnnot: StateDone,
			CurrentImageAnnot: img, DesiredImageAnnot: img,
		})
		if err := s.o.Client.Patch(ctx, n, client.MergeFrom(base)); err != nil {
			return fmt.Errorf("bootstrapping node %s: %w", n.Name, err)
		}
	}
	mcn := &mcfgv1.MachineConfigNode{}
	err := s.o.Client.Get(ctx, client.ObjectKey{Name: n.Name}, mcn)
	if !apierrors.IsNotFound(err) {
		return err
	}
	mcn = &mcfgv1.MachineConfigNode{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name},
		Spec: mcfgv1.MachineConfigNodeSpec{
			Node:          mcfgv1.MCOObjectReference{Name: n.Name},
			Pool:          mcfgv1.MCOObjectReference{Name: pool.Name},
			ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: n.Annotations[DesiredConfigAnnot]},
		},
	}
	if err := s.o.Client.Create(ctx, mcn); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating MachineConfigNode %s: %w", n.Name, err)
	}
	return nil
}

// target plays the node controller: degraded nodes are re-targeted at
// once (they are unavailable already), idle nodes only while fewer than
// maxUnavailable nodes are unavailable.
func (s *Sim) target(ctx context.Context, pool *mcfgv1.MachineConfigPool, nodes []corev1.Node, target string) error {
	limit, err := intstr.GetScaledValueFromIntOrPercent(maxUnavailable(pool), len(nodes), false)
	if err != nil {
		return fmt.Errorf("spec.maxUnavailable: %w", err)
	}
	limit = max(limit, 1)
	unavailable := 0
	for i := range nodes {
		if isUnavailable(&nodes[i]) {
			unavailable++
		}
	}
	for i := range nodes {
		n := &nodes[i]
		if n.Annotations[DesiredConfigAnnot] == target {
			continue
		}
		switch {
		case n.Annotations[StateAnnot] == StateDegraded:
		case isUnavailable(n):
			continue // finishing another update first
		case unavailable < limit:
			unavailable++
		default:
			continue
		}
		if err := s.setDesired(ctx, n, target); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sim) setDesired(ctx context.Context, n *corev1.Node, target string) error {
	base := n.DeepCopy()
	n.Annotations = mergeMaps(n.Annotations, map[string]string{DesiredConfigAnnot: target, DesiredImageAnnot: s.imageOf(ctx, target)})
	if err := s.o.Client.Patch(ctx, n, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("setting desiredConfig of node %s: %w", n.Name, err)
	}
	mcn := &mcfgv1.MachineConfigNode{}
	if err := s.o.Client.Get(ctx, client.ObjectKey{Name: n.Name}, mcn); err != nil {
		return err
	}
	mbase := mcn.DeepCopy()
	mcn.Spec.ConfigVersion.Desired = target
	return s.o.Client.Patch(ctx, mcn, client.MergeFrom(mbase))
}

func maxUnavailable(pool *mcfgv1.MachineConfigPool) *intstr.IntOrString {
	if pool.Spec.MaxUnavailable != nil {
		return pool.Spec.MaxUnavailable
	}
	one := intstr.FromInt32(1)
	return &one
}

func isUnavailable(n *corev1.Node) bool {
	a := n.Annotations
	return a[DesiredConfigAnnot] != a[CurrentConfigAnnot] || a[StateAnnot] != StateDone || n.Spec.Unschedulable
}

// poolStatus writes the counters and conditions MCO's pool status has.
func (s *Sim) poolStatus(ctx context.Context, pool *mcfgv1.MachineConfigPool, nodes []corev1.Node, target string) error {
	st := pool.Status
	st.MachineCount = int32(len(nodes))
	st.UpdatedMachineCount, st.ReadyMachineCount, st.UnavailableMachineCount, st.DegradedMachineCount = 0, 0, 0, 0
	degradedMsg := ""
	for i := range nodes {
		n := &nodes[i]
		a := n.Annotations
		updated := a[CurrentConfigAnnot] == target && a[DesiredConfigAnnot] == target && a[StateAnnot] == StateDone
		if updated {
			st.UpdatedMachineCount++
			if !n.Spec.Unschedulable {
				st.ReadyMachineCount++
			}
		}
		if isUnavailable(n) {
			st.UnavailableMachineCount++
		}
		if a[StateAnnot] == StateDegraded {
			st.DegradedMachineCount++
			degradedMsg = fmt.Sprintf("Node %s is reporting: %q", n.Name, a[ReasonAnnot])
		}
	}
	allUpdated := st.MachineCount > 0 && st.UpdatedMachineCount == st.MachineCount
	if allUpdated {
		st.Configuration = pool.Spec.Configuration
	}
	st.ObservedGeneration = pool.Generation
	st.Conditions = []mcfgv1.MachineConfigPoolCondition{
		poolCond(mcfgv1.MachineConfigPoolUpdated, allUpdated, ""),
		poolCond(mcfgv1.MachineConfigPoolUpdating, !allUpdated && st.DegradedMachineCount == 0, ""),
		poolCond(mcfgv1.MachineConfigPoolNodeDegraded, st.DegradedMachineCount > 0, degradedMsg),
		poolCond(mcfgv1.MachineConfigPoolDegraded, st.DegradedMachineCount > 0, degradedMsg),
	}
	if equalStatus(pool.Status, st) {
		return nil
	}
	pool.Status = st
	return s.o.Client.Status().Update(ctx, pool)
}

func poolCond(t mcfgv1.MachineConfigPoolConditionType, on bool, msg string) mcfgv1.MachineConfigPoolCondition {
	status := corev1.ConditionFalse
	if on {
		status = corev1.ConditionTrue
	}
	return mcfgv1.MachineConfigPoolCondition{Type: t, Status: status, Message: msg, LastTransitionTime: metav1.Now()}
}

// equalStatus ignores transition times, so an unchanged pool is not rewritten.
func equalStatus(a, b mcfgv1.MachineConfigPoolStatus) bool {
	if a.MachineCount != b.MachineCount || a.UpdatedMachineCount != b.UpdatedMachineCount ||
		a.ReadyMachineCount != b.ReadyMachineCount || a.UnavailableMachineCount != b.UnavailableMachineCount ||
		a.DegradedMachineCount != b.DegradedMachineCount || a.Configuration.Name != b.Configuration.Name ||
		a.ObservedGeneration != b.ObservedGeneration || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		if a.Conditions[i].Type != b.Conditions[i].Type || a.Conditions[i].Status != b.Conditions[i].Status || a.Conditions[i].Message != b.Conditions[i].Message {
			return false
		}
	}
	return true
}

// imageOf is the osImageURL of a rendered config, which the node controller
// copies into the desiredImage annotation.
func (s *Sim) imageOf(ctx context.Context, rendered string) string {
	mc := &mcfgv1.MachineConfig{}
	if err := s.o.Client.Get(ctx, client.ObjectKey{Name: rendered}, mc); err != nil {
		return ""
	}
	return mc.Spec.OSImageURL
}
