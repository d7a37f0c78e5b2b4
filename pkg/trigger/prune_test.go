package trigger

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestRetentionBlockIsParsedWithDefaultsAndClearErrors(t *testing.T) {
	const at = "ConfigMap kiln/kiln-config: data.retention"
	cases := []struct {
		name    string
		block   string // "" leaves the key out
		want    Retention
		wantErr string
	}{
		{name: "absent: keep 3, no schedule, dry run", want: Retention{KeepPerPool: 3}},
		{name: "every key", block: "keepPerPool: 5\nschedule: 24h\napply: true\n", want: Retention{KeepPerPool: 5, Schedule: 24 * time.Hour, Apply: true}},
		{name: "schedule off, unquoted (YAML reads false)", block: "schedule: off\n", want: Retention{KeepPerPool: 3}},
		{name: "schedule off, quoted", block: "schedule: \"off\"\nkeepPerPool: 0\n", want: Retention{}},
		{name: "a negative keep count", block: "keepPerPool: -1\n", wantErr: at + ".keepPerPool -1: want a whole number of images from 0 to 1000"},
		{name: "a fractional keep count", block: "keepPerPool: 2.5\n", wantErr: at + ".keepPerPool 2.5: want a whole number"},
		{name: "a schedule that is no duration", block: "schedule: daily\n", wantErr: at + ".schedule daily: want off or a Go duration of at least 10m0s, such as 24h"},
		{name: "a schedule too short", block: "schedule: 1m\n", wantErr: at + ".schedule 1m: want off or a Go duration of at least 10m0s"},
		{name: "apply as a string", block: "apply: \"yes\"\n", wantErr: at + ".apply yes: want true or false"},
		{name: "an unknown key", block: "keep: 3\n", wantErr: at + ".keep unknown key: want keepPerPool, schedule or apply"},
		{name: "not a map", block: "- 3\n", wantErr: at + ": want a map with keepPerPool, schedule and apply"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kiln", Name: ConfigName},
				Data: map[string]string{keyRepository: "registry.example.com/os-{pool}"}}
			if c.block != "" {
				cm.Data[keyRetention] = c.block
			}
			cfg, err := ParseConfig(cm)
			if c.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
					t.Fatalf("ParseConfig = %v, want an error starting %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, cfg.Retention); d != "" {
				t.Errorf("retention (-want +got):\n%s", d)
			}
		})
	}
}

// pruneRuns lists the scheduled prune's TaskRuns.
func (h *harness) pruneRuns() []pipelinev1.TaskRun {
	h.t.Helper()
	var l pipelinev1.TaskRunList
	if err := h.c.List(context.Background(), &l, client.InNamespace(ns), client.MatchingLabels{LabelTask: taskPrune}); err != nil {
		h.t.Fatal(err)
	}
	return l.Items
}

// setRetention sets kiln-config's retention block.
func (h *harness) setRetention(block string) {
	h.update(&corev1.ConfigMap{}, ConfigName, ns, func(o client.Object) { o.(*corev1.ConfigMap).Data[keyRetention] = block })
}

// reconcilePrune runs one reconcile of the prune with a controller of
// its own, as the manager would on an event.
func (h *harness) reconcilePrune() reconcile.Result {
	h.t.Helper()
	c := &Controller{Client: h.c, APIReader: h.c, Namespace: ns}
	res, err := c.reconcilePrune(context.Background(), pruneKey)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// finishTaskRun plays Tekton's part: the TaskRun ends with ok.
func (h *harness) finishTaskRun(name string, ok corev1.ConditionStatus) {
	h.t.Helper()
	var tr pipelinev1.TaskRun
	if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &tr); err != nil {
		h.t.Fatal(err)
	}
	tr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: ok}}
	if err := h.c.Status().Update(context.Background(), &tr); err != nil {
		h.t.Fatal(err)
	}
}

func TestScheduledPruneIsOffByDefault(t *testing.T) {
	h := newHarness(t)
	if res := h.reconcilePrune(); res != (reconcile.Result{}) {
		t.Errorf("reconcile without a retention block = %+v, want nothing scheduled", res)
	}
	h.setRetention("keepPerPool: 2\napply: true\n")
	if res := h.reconcilePrune(); res != (reconcile.Result{}) {
		t.Errorf("reconcile with a retention block but no schedule = %+v, want nothing scheduled", res)
	}
	if got := h.pruneRuns(); len(got) != 0 {
		t.Errorf("prune TaskRuns %d, want none", len(got))
	}
}

// TestScheduledPruneRunsWhenDueOneAtATime: with a schedule, the first
// reconcile makes a kiln-prune TaskRun with the retention block's params
// and kiln-config's workspaces and steps image;
// none more while it runs, none before the schedule has passed since it
// was made, and the next once it has.
func TestScheduledPruneRunsWhenDueOneAtATime(t *testing.T) {
	h := newHarness(t)
	h.setRetention("schedule: 24h\nkeepPerPool: 5\napply: true\n")
	if res := h.reconcilePrune(); res.RequeueAfter != 24*time.Hour {
		t.Errorf("after creating a prune, requeue %v, want the schedule", res.RequeueAfter)
	}
	runs := h.pruneRuns()
	if len(runs) != 1 {
		t.Fatalf("prune TaskRuns %d, want 1", len(runs))
	}
	tr := runs[0]
	params := map[string]string{}
	for _, p := range tr.Spec.Params {
		params[p.Name] = p.Value.StringVal
	}
	want := map[string]string{"repository": "registry.example/os-{pool}", "keep-per-pool": "5", "apply": "true", "kiln-image": "ghcr.io/kiln-dev/kiln-steps:v0.1.0"}
	if d := cmp.Diff(want, params); d != "" {
		t.Errorf("params (-want +got):\n%s", d)
	}
	var bound []string
	for _, w := range tr.Spec.Workspaces {
		bound = append(bound, w.Name)
	}
	// registries is the trigger's copy of the cluster's registries config,
	// as node-image runs get it.
	if d := cmp.Diff([]string{"work", "public-key", "registries"}, bound); d != "" {
		t.Errorf("workspaces (-want +got):\n%s", d)
	}
	if tr.Spec.TaskRef.Name != PruneTask || tr.Spec.ServiceAccountName != "kiln-prune" {
		t.Errorf("task %q as %q, want %s as kiln-prune", tr.Spec.TaskRef.Name, tr.Spec.ServiceAccountName, PruneTask)
	}

	if res := h.reconcilePrune(); res.RequeueAfter != pruneRecheck || len(h.pruneRuns()) != 1 {
		t.Errorf("while the prune runs: requeue %v, %d TaskRuns; want %v and still 1", res.RequeueAfter, len(h.pruneRuns()), pruneRecheck)
	}
	h.finishTaskRun(tr.Name, corev1.ConditionTrue)
	if res := h.reconcilePrune(); res.RequeueAfter < 23*time.Hour || len(h.pruneRuns()) != 1 {
		t.Errorf("right after the prune: requeue %v, %d TaskRuns; want the rest of the day and still 1", res.RequeueAfter, len(h.pruneRuns()))
	}
	// A day later (the prune made a day ago), the next one is due.
	h.update(&pipelinev1.TaskRun{}, tr.Name, ns, func(o client.Object) {
		o.SetAnnotations(map[string]string{AnnotCreated: time.Now().Add(-25 * time.Hour).UTC().Format(time.RFC3339Nano)})
	})
	time.Sleep(time.Second) // the next TaskRun's name has the second it is made in
	h.reconcilePrune()
	if n := len(h.pruneRuns()); n != 2 {
		t.Errorf("a day after the last prune: %d TaskRuns, want 2", n)
	}
}

// TestScheduledPruneWaitsForARunBetweenImageBuildAndRollout: a pool's run
// whose image-build TaskRun succeeded and whose rollout has not finished
// postpones the whole prune; once its rollout TaskRun finished, the
// prune is made.
func TestScheduledPruneWaitsForARunBetweenImageBuildAndRollout(t *testing.T) {
	h := newHarness(t)
	h.setRetention("schedule: 1h\n")
	run := &pipelinev1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", Namespace: ns,
		Labels: map[string]string{LabelRunsManagedBy: ManagedBy, LabelPool: "worker", LabelPipeline: pipelineNodeImage}},
		Spec: pipelinev1.PipelineRunSpec{PipelineRef: &pipelinev1.PipelineRef{Name: "kiln-node-image"}}}
	h.create(run)
	h.progress("worker-1", []string{"render", "image-build"}, "")
	for _, task := range []string{"image-build", "rollout"} {
		h.create(&pipelinev1.TaskRun{ObjectMeta: metav1.ObjectMeta{Name: "worker-1-" + task, Namespace: ns},
			Spec: pipelinev1.TaskRunSpec{TaskRef: &pipelinev1.TaskRef{Name: "kiln-" + task}}})
	}

	// image-build still running: its image is not signed yet, nothing to wait for.
	if h.reconcilePrune(); len(h.pruneRuns()) != 1 {
		t.Fatalf("with image-build running: %d prune TaskRuns, want 1", len(h.pruneRuns()))
	}
	for _, tr := range h.pruneRuns() {
		if err := h.c.Delete(context.Background(), &tr); err != nil {
			t.Fatal(err)
		}
	}

	h.finishTaskRun("worker-1-image-build", corev1.ConditionTrue)
	h.progress("worker-1", []string{"render", "image-build", "image-sign", "verify", "rollout"}, "")
	if res := h.reconcilePrune(); res.RequeueAfter != pruneRecheck || len(h.pruneRuns()) != 0 {
		t.Fatalf("between image-build and rollout: requeue %v, %d prune TaskRuns; want %v and none", res.RequeueAfter, len(h.pruneRuns()), pruneRecheck)
	}
	busy, err := (&Controller{APIReader: h.c, Namespace: ns}).runsBetweenBuildAndRollout(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"pool worker's run worker-1"}, busy); d != "" {
		t.Errorf("runs postponing the prune (-want +got):\n%s", d)
	}

	h.finishTaskRun("worker-1-rollout", corev1.ConditionTrue)
	if h.reconcilePrune(); len(h.pruneRuns()) != 1 {
		t.Errorf("after the rollout finished: %d prune TaskRuns, want 1", len(h.pruneRuns()))
	}
}

// FuzzParseRetention: any block either parses to a retention within its
// bounds or is refused with an error naming data.retention; it never
// panics.
func FuzzParseRetention(f *testing.F) {
	f.Add("keepPerPool: 5\nschedule: 24h\napply: true\n")
	f.Add("schedule: off\n")
	f.Add("keepPerPool: 1e9\n")
	f.Fuzz(func(t *testing.T, block string) {
		r, err := parseRetention(block, "data.retention")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "data.retention") {
				t.Fatalf("error %q does not name data.retention", err)
			}
			return
		}
		if r.KeepPerPool < 0 || r.KeepPerPool > 1000 || (r.Schedule != 0 && r.Schedule < minPruneInterval) {
			t.Fatalf("%q parsed to %+v, out of bounds", block, r)
		}
	})
}
