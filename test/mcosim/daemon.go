package mcosim

import (
	"context"
	"fmt"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cond is one condition a phase step sets.
type cond struct {
	typ    mcfgv1.StateProgress
	status metav1.ConditionStatus
	reason string
	msg    string
}

// phaseStep is one step of the daemon's update: conditions to set and
// what happens to the Node.
type phaseStep struct {
	conds  []cond
	cordon *bool
	done   bool // the node now runs the desired config
}

var (
	yes, no = true, false
	U, T    = metav1.ConditionUnknown, metav1.ConditionTrue
)

// updateSteps follow the MachineConfigNode enhancement: each parent phase goes Unknown while its
// children run, then True; Updated is False from the start and True last.
func updateSteps(node, desired string) []phaseStep {
	return []phaseStep{
		{conds: []cond{
			{mcfgv1.MachineConfigNodeUpdated, metav1.ConditionFalse, "Updated", fmt.Sprintf("Node %s needs an update", node)},
			{mcfgv1.MachineConfigNodeUpdatePrepared, U, "UpdatePrepared", "Preparing the update"},
			{"UpdateCompatible", U, "UpdatePreparedUpdateCompatible", "Checking update compatibility"},
		}},
		{conds: []cond{
			{"UpdateCompatible", T, "UpdatePreparedUpdateCompatible", "Update Compatible. Post Cfg Actions [reboot]: Drain Required: true"},
			{mcfgv1.MachineConfigNodeUpdatePrepared, T, "UpdateCompatible", "Update is Compatible."},
		}},
		{cordon: &yes, conds: []cond{
			{mcfgv1.MachineConfigNodeUpdateExecuted, U, "Cordoned", "Cordoning node as part of the update"},
			{mcfgv1.MachineConfigNodeUpdateCordoned, T, "UpdateExecutedCordoned", "Cordoned node. The node is reporting Unschedulable = true"},
			{mcfgv1.MachineConfigNodeUpdateDrained, U, "UpdateExecutedDrained", "Draining node. The drain will not be complete until desired drainer drain-" + desired + " matches the current drainer"},
		}},
		{conds: []cond{
			{mcfgv1.MachineConfigNodeUpdateDrained, T, "UpdateExecutedDrained", "Drained node"},
			{mcfgv1.MachineConfigNodeUpdateFilesAndOS, U, "UpdateExecutedAppliedFilesAndOS", "Applying files and new OS config to node"},
		}},
		{conds: []cond{
			{mcfgv1.MachineConfigNodeUpdateFilesAndOS, T, "UpdateExecutedAppliedFilesAndOS", "Applied files and new OS config to node"},
			{mcfgv1.MachineConfigNodeUpdateExecuted, T, "UpdateExecuted", "Updated the files and the OS on disk"},
		}},
		{conds: []cond{
			{mcfgv1.MachineConfigNodeUpdatePostActionComplete, U, "UpdatePostActionComplete", "Performing post config update action"},
			{mcfgv1.MachineConfigNodeUpdateRebooted, U, "UpdatePostActionCompleteRebootedNode", "Upgrade requires a reboot. Rebooting the node"},
		}},
		{conds: []cond{
			{mcfgv1.MachineConfigNodeUpdateRebooted, T, "UpdatePostActionCompleteRebootedNode", "Node rebooted"},
			{mcfgv1.MachineConfigNodeUpdatePostActionComplete, T, "UpdatePostActionComplete", "Post config update action complete"},
		}},
		{cordon: &no, conds: []cond{
			{mcfgv1.MachineConfigNodeUpdateComplete, U, "UpdateComplete", "Completing the update"},
			{mcfgv1.MachineConfigNodeUpdateUncordoned, T, "UpdateCompleteUncordoned", "Uncordoned node. The node is reporting Unschedulable = false"},
		}},
		{done: true, conds: []cond{
			{mcfgv1.MachineConfigNodeUpdateComplete, T, "UpdateComplete", "Update completed"},
			{mcfgv1.MachineConfigNodeResumed, U, "Resumed", "Resuming normal operations"},
		}},
		{conds: []cond{
			{mcfgv1.MachineConfigNodeResumed, T, "Resumed", "In desired config " + desired + ". Resumed normal operations."},
		}},
		{conds: []cond{
			{mcfgv1.MachineConfigNodeUpdated, T, "NodeUpgradeComplete", "Node has completed update to config " + desired},
		}},
	}
}

// daemon is one node's update state, kept in memory like the real daemon's.
type daemon struct {
	desired  string
	next     int
	lastStep time.Time
	degraded bool
}

func (s *Sim) daemonFor(node string) *daemon {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.daemons[node]
	if !ok {
		d = &daemon{}
		s.daemons[node] = d
	}
	return d
}

// step advances the node by at most one phase step per StepDelay.
func (d *daemon) step(ctx context.Context, s *Sim, n *corev1.Node) error {
	desired, current := n.Annotations[DesiredConfigAnnot], n.Annotations[CurrentConfigAnnot]
	if desired != d.desired { // new work: start over, dropping any failure
		*d = daemon{desired: desired}
	}
	steps := updateSteps(n.Name, desired)
	if desired == current && d.next == 0 && n.Annotations[StateAnnot] == StateDegraded {
		// Rolled back to the config it runs: the failed update is abandoned.
		d.next = len(steps)
		return s.recover(ctx, n, desired)
	}
	if desired == current && d.next == 0 || d.degraded || d.next >= len(steps) || time.Since(d.lastStep) < s.o.StepDelay {
		return nil
	}
	st := steps[d.next]
	if phase, ok := s.injectedFailure(ctx, n, desired, st); ok {
		d.degraded = true
		return s.degrade(ctx, n, phase)
	}
	if err := s.apply(ctx, n, st, desired); err != nil {
		return fmt.Errorf("node %s step %d: %w", n.Name, d.next, err)
	}
	d.next++
	d.lastStep = time.Now()
	return nil
}

// injectedFailure reports whether the node is labelled to fail at a
// condition this step starts, for this desired config.
func (s *Sim) injectedFailure(ctx context.Context, n *corev1.Node, desired string, st phaseStep) (string, bool) {
	at := n.Labels[DegradeAtLabel]
	if at == "" {
		return "", false
	}
	starts := false
	for _, c := range st.conds {
		starts = starts || (string(c.typ) == at && c.status == U)
	}
	if !starts {
		return "", false
	}
	if img := n.Labels[DegradeImageLabel]; img != "" {
		mc := &mcfgv1.MachineConfig{}
		if err := s.o.Client.Get(ctx, client.ObjectKey{Name: desired}, mc); err != nil || !strings.Contains(mc.Spec.OSImageURL, img) {
			return "", false
		}
	}
	return at, true
}

// apply writes one step: Node annotations and cordon, then MCN status.
func (s *Sim) apply(ctx context.Context, n *corev1.Node, st phaseStep, desired string) error {
	base := n.DeepCopy()
	switch {
	case st.done:
		n.Annotations = mergeMaps(n.Annotations, map[string]string{
			CurrentConfigAnnot: desired, CurrentImageAnnot: n.Annotations[DesiredImageAnnot], StateAnnot: StateDone,
		})
	case n.Annotations[CurrentConfigAnnot] != desired: // steps after done leave the state alone
		n.Annotations = mergeMaps(n.Annotations, map[string]string{StateAnnot: StateWorking})
	}
	if st.cordon != nil {
		n.Spec.Unschedulable = *st.cordon
	}
	if err := s.o.Client.Patch(ctx, n, client.MergeFrom(base)); err != nil {
		return err
	}
	return s.setConditions(ctx, n.Name, base.Annotations[CurrentConfigAnnot], desired, st.conds, len(st.conds) > 0 && st.conds[len(st.conds)-1].typ == mcfgv1.MachineConfigNodeUpdated && st.conds[len(st.conds)-1].status == T)
}

// recover returns a degraded node to Done on the config it already runs.
func (s *Sim) recover(ctx context.Context, n *corev1.Node, current string) error {
	base := n.DeepCopy()
	n.Spec.Unschedulable = false
	n.Annotations = mergeMaps(n.Annotations, map[string]string{StateAnnot: StateDone, ReasonAnnot: ""})
	if err := s.o.Client.Patch(ctx, n, client.MergeFrom(base)); err != nil {
		return err
	}
	return s.setConditions(ctx, n.Name, current, current, []cond{
		{mcfgv1.MachineConfigNodeUpdated, T, "NodeUpgradeComplete", "Node has completed update to config " + current},
	}, true)
}

// degrade marks the node failed at phase, as the daemon does on an error.
func (s *Sim) degrade(ctx context.Context, n *corev1.Node, phase string) error {
	msg := fmt.Sprintf("%s failed: mcosim injected failure on node %s", phase, n.Name)
	base := n.DeepCopy()
	n.Annotations = mergeMaps(n.Annotations, map[string]string{StateAnnot: StateDegraded, ReasonAnnot: msg})
	if err := s.o.Client.Patch(ctx, n, client.MergeFrom(base)); err != nil {
		return err
	}
	return s.setConditions(ctx, n.Name, n.Annotations[CurrentConfigAnnot], n.Annotations[DesiredConfigAnnot], []cond{
		{mcfgv1.StateProgress(phase), U, "UpdateExecuted" + phase, msg},
		{mcfgv1.MachineConfigNodeNodeDegraded, T, "NodeDegraded", msg},
	}, false)
}

// setConditions writes conditions to the node's MachineConfigNode status.
// On completion every other condition goes back to False, as the MCN enhancement
// describes ("Action during previous iteration: …").
func (s *Sim) setConditions(ctx context.Context, node, current, desired string, conds []cond, completed bool) error {
	mcn := &mcfgv1.MachineConfigNode{}
	if err := s.o.Client.Get(ctx, client.ObjectKey{Name: node}, mcn); err != nil {
		return err
	}
	now := metav1.Now()
	if completed {
		meta.RemoveStatusCondition(&mcn.Status.Conditions, string(mcfgv1.MachineConfigNodeNodeDegraded))
		for i := range mcn.Status.Conditions {
			c := &mcn.Status.Conditions[i]
			if c.Type != string(mcfgv1.MachineConfigNodeUpdated) && c.Status != metav1.ConditionFalse {
				c.Status, c.LastTransitionTime = metav1.ConditionFalse, now
				c.Message = "Action during previous iteration: " + c.Message
			}
		}
	} else if len(conds) > 0 && conds[0].typ != mcfgv1.MachineConfigNodeNodeDegraded {
		meta.RemoveStatusCondition(&mcn.Status.Conditions, string(mcfgv1.MachineConfigNodeNodeDegraded))
	}
	for _, c := range conds {
		meta.SetStatusCondition(&mcn.Status.Conditions, metav1.Condition{Type: string(c.typ), Status: c.status, Reason: c.reason, Message: c.msg, LastTransitionTime: now})
	}
	// The node runs current until the update completes.
	cv := &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Desired: desired, Current: current}
	if completed {
		cv.Current = desired
	}
	mcn.Status.ConfigVersion = cv
	mcn.Status.ObservedGeneration = max(mcn.Status.ObservedGeneration, mcn.Generation)
	return s.o.Client.Status().Update(ctx, mcn)
}
