package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/trigger"
)

// assertMachineSetsPatched: the worker run's bootimages task moved the
// stale GCP MachineSets to the stream's image and left the current one and
// the Hive-owned one alone (the boot image enhancement's rules).
func (c *cluster) assertMachineSetsPatched(ctx context.Context) {
	c.t.Helper()
	want := map[string]string{
		"kiln-demo-7xk2p-worker-a":    "rhcos-9-6-20251015-0-gcp-x86-64",
		"kiln-demo-7xk2p-infra-c":     "rhcos-9-6-20251015-0-gcp-x86-64",
		"kiln-demo-7xk2p-worker-b":    "rhcos-9-6-20251015-0-gcp-x86-64",
		"kiln-demo-7xk2p-worker-hive": "rhcos-9-6-20250701-0-gcp-x86-64",
	}
	for name, image := range want {
		ms := &machinev1beta1.MachineSet{}
		if err := c.c.Get(ctx, client.ObjectKey{Namespace: "openshift-machine-api", Name: name}, ms); err != nil {
			c.t.Fatal(err)
		}
		raw := ""
		if ms.Spec.Template.Spec.ProviderSpec.Value != nil {
			raw = string(ms.Spec.Template.Spec.ProviderSpec.Value.Raw)
		}
		if !strings.Contains(raw, "/"+image+`"`) {
			c.t.Errorf("MachineSet %s: providerSpec %s, want image %s", name, raw, image)
		}
	}
}

// failedTasks describes the TaskRuns of r that did not succeed, with
// their steps' termination messages.
func (c *cluster) failedTasks(ctx context.Context, r *pipelinev1.PipelineRun) string {
	var b strings.Builder
	for _, ref := range r.Status.ChildReferences {
		tr := &pipelinev1.TaskRun{}
		if err := c.c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: ref.Name}, tr); err != nil {
			fmt.Fprintf(&b, "TaskRun %s: %v\n", ref.Name, err)
			continue
		}
		cond := tr.Status.GetCondition("Succeeded")
		if cond.IsTrue() {
			continue
		}
		fmt.Fprintf(&b, "TaskRun %s (%s): %s %s\n", tr.Name, ref.PipelineTaskName, cond.GetReason(), cond.GetMessage())
		for _, s := range tr.Status.Steps {
			if s.Terminated != nil {
				fmt.Fprintf(&b, "  step %s: exit %d %s\n", s.Name, s.Terminated.ExitCode, s.Terminated.Message)
			}
		}
		b.WriteString(c.node.PodLogs(ctx, r.Namespace, tr.Status.PodName))
	}
	return b.String()
}

// describe is what a timeout shows: every run's state and the pods that
// are not done.
func (c *cluster) describe(ctx context.Context) string {
	var b strings.Builder
	b.WriteString(c.runTable(ctx))
	pods := &corev1.PodList{}
	if err := c.c.List(ctx, pods, client.InNamespace(kilnNS)); err == nil {
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodSucceeded {
				fmt.Fprintf(&b, "pod %s: %s %s\n", p.Name, p.Status.Phase, p.Status.Message)
				for _, cs := range p.Status.ContainerStatuses {
					if cs.State.Waiting != nil {
						fmt.Fprintf(&b, "  %s waiting: %s %s\n", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
					}
					if last := cs.LastTerminationState.Terminated; cs.RestartCount > 0 && last != nil {
						fmt.Fprintf(&b, "  %s restarted %d times, last exit %d: %s %s\n", cs.Name, cs.RestartCount, last.ExitCode, last.Reason, last.Message)
					}
				}
				// A long-lived pod (the trigger) that made no run says why
				// only in its log; a task pod's log is shown by failedTasks.
				if _, isTask := p.Labels["tekton.dev/taskRun"]; !isTask && p.Status.Phase == corev1.PodRunning {
					b.WriteString(c.node.PodLogs(ctx, p.Namespace, p.Name))
				}
			}
		}
	}
	return b.String()
}

// runTable is the PipelineRun table the closing note shows: one line per
// run, oldest first. TO_ROLLOUT is the time from the change that made the
// run (noteChange) to its rollout task starting: what an operator waits
// between a commit and nodes moving.
func (c *cluster) runTable(ctx context.Context) string {
	list := &pipelinev1.PipelineRunList{}
	if err := c.c.List(ctx, list, client.InNamespace(kilnNS)); err != nil {
		return err.Error()
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].CreationTimestamp.Before(&list.Items[j].CreationTimestamp)
	})
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tPOOL\tTRIGGER\tSTATUS\tTASKS\tDURATION\tTO_ROLLOUT\tIMAGE_DIGEST")
	for _, r := range list.Items {
		cond := r.Status.GetCondition("Succeeded")
		status, dur, digest := "Running", "-", "-"
		if cond != nil {
			status = cond.GetReason()
		}
		if r.Status.StartTime != nil && r.Status.CompletionTime != nil {
			dur = r.Status.CompletionTime.Sub(r.Status.StartTime.Time).Round(time.Second).String()
		}
		for _, res := range r.Status.Results {
			if res.Name == "IMAGE_DIGEST" {
				digest = res.Value.StringVal
				if len(digest) > 19 {
					digest = digest[:19] // sha256: and 12 hex digits
				}
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.Name, r.Labels[trigger.LabelPool], r.Labels[trigger.LabelTrigger],
			status, len(r.Status.ChildReferences), dur, c.toRollout(ctx, &r), digest)
	}
	w.Flush()
	return b.String()
}

// printRuns writes the table to stdout too, so that `make e2e` shows it
// without -v.
func (c *cluster) printRuns(ctx context.Context) {
	table := c.runTable(ctx)
	c.t.Log("\n" + table)
	fmt.Fprint(os.Stdout, table)
}
