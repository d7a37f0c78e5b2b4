package trigger

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/pipeline"
	"github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
)

func aheadTarget(v string) payload.Target {
	return payload.Target{Version: v, Image: "quay.io/openshift-release-dev/ocp-release@sha256:" + fpA + fpA, Why: []string{payload.SelectZStream}}
}

func TestDecideAhead(t *testing.T) {
	want := func(sum string) aheadWant { return aheadWant{target: aheadTarget("4.18." + sum[:1]), sum: sum} }
	unreadable := func(sum string) aheadWant {
		w := want(sum)
		w.err = errors.New("reading release 4.18.x: connection refused")
		return w
	}
	type got struct {
		Create []string // sums
		Cancel []string // name:status
	}
	for _, tc := range []struct {
		name  string
		runs  []*pipelinev1.PipelineRun
		wants []aheadWant
		want  got
	}{
		{name: "no target, no run: nothing"},
		{name: "a target without a run gets one", wants: []aheadWant{want(fpA)}, want: got{Create: []string{fpA}}},
		{name: "two targets get a run each", wants: []aheadWant{want(fpA), want(fpB)}, want: got{Create: []string{fpA, fpB}}},
		{name: "a target whose run is live: nothing", runs: []*pipelinev1.PipelineRun{run(fpA, "active", 1)}, wants: []aheadWant{want(fpA)}},
		{name: "a target whose run failed is not retried", runs: []*pipelinev1.PipelineRun{run(fpA, "failed", 1)}, wants: []aheadWant{want(fpA)}},
		{name: "a newer target cancels the older target's run",
			runs: []*pipelinev1.PipelineRun{run(fpA, "active", 1)}, wants: []aheadWant{want(fpB)},
			want: got{Create: []string{fpB}, Cancel: []string{RunName("w", TriggerMachineConfig, fpA) + ":CancelledRunFinally"}}},
		{name: "no target any more cancels a pending run",
			runs: []*pipelinev1.PipelineRun{run(fpA, "pending", 1)},
			want: got{Cancel: []string{RunName("w", TriggerMachineConfig, fpA) + ":Cancelled"}}},
		{name: "finished runs of old targets are history",
			runs: []*pipelinev1.PipelineRun{run(fpA, "succeeded", 1), run(fpC, "failed", 2)}, wants: []aheadWant{want(fpB)},
			want: got{Create: []string{fpB}}},
		{name: "the same target twice makes one run", wants: []aheadWant{want(fpA), want(fpA)}, want: got{Create: []string{fpA}}},
		{name: "a target whose payload cannot be read gets no run", wants: []aheadWant{unreadable(fpA), want(fpB)}, want: got{Create: []string{fpB}}},
		{name: "a target whose payload cannot be read now keeps its live run", runs: []*pipelinev1.PipelineRun{run(fpA, "active", 1)}, wants: []aheadWant{unreadable(fpA)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := decideAhead(tc.runs, tc.wants)
			var g got
			for _, w := range p.create {
				g.Create = append(g.Create, w.sum)
			}
			for r, st := range p.cancel {
				g.Cancel = append(g.Cancel, r.Name+":"+string(st))
			}
			sort.Strings(g.Cancel)
			if d := cmp.Diff(tc.want, g); d != "" {
				t.Fatalf("decideAhead (-want +got):\n%s", d)
			}
		})
	}
}

// TestBuildAheadRunSaysWhichReleaseAndSkipsRollout: the run names its
// release, skips rollout and boot images, and its os-image,
// extensions-image and dtk-image params are the target's, overriding a
// dtk-image kiln-config sets for the pool's own runs.
func TestBuildAheadRunSaysWhichReleaseAndSkipsRollout(t *testing.T) {
	c := Config{Repository: "registry.example/os-{pool}", Pipeline: "kiln-node-image", Params: map[string]string{"canary": "1", paramDTKImage: "quay.io/running/dtk@sha256:" + strings.Repeat("0", 64)}}
	tg := aheadTarget("4.19.1")
	f := payload.Facts{BaseOSImage: "quay.io/ocp/os@sha256:" + strings.Repeat("1", 64), ExtensionsImage: "quay.io/ocp/ext@sha256:" + strings.Repeat("2", 64),
		DriverToolkitImage: "quay.io/ocp/dtk@sha256:" + strings.Repeat("3", 64)}
	pr := BuildAheadRun(c, RunSpec{Namespace: "kiln", Pool: "worker", Fingerprint: Fingerprint{Sum: fpA}, BootImages: "abc", KmodRebuild: true}, tg, f)
	sum := AheadSum(fpA, tg)
	params := map[string]string{}
	for _, p := range pr.Spec.Params {
		params[p.Name] = p.Value.StringVal
	}
	got := struct {
		Name          string
		Labels, Annot map[string]string
		Params        map[string]string
	}{pr.Name, pr.Labels, map[string]string{AnnotTargetReleaseImage: pr.Annotations[AnnotTargetReleaseImage], AnnotChanges: pr.Annotations[AnnotChanges]}, params}
	changes := "prepares release 4.19.1 (" + tg.Image + ") ahead of the upgrade; no rollout"
	want := got
	want.Name = "kiln-worker-ahead-4.19.1-" + sum[:10]
	want.Labels = map[string]string{LabelRunsManagedBy: ManagedBy, LabelPool: "worker", LabelFingerprint: sum, LabelTrigger: TriggerUpgradeAhead,
		LabelPipeline: pipelineAhead, LabelTargetRelease: "4.19.1"}
	want.Annot = map[string]string{AnnotTargetReleaseImage: tg.Image, AnnotChanges: changes}
	want.Params = map[string]string{"canary": "1", "pool": "worker", "repository": "registry.example/os-worker", "trigger": TriggerUpgradeAhead,
		"changes": changes, "update-boot-images": "false", paramRollout: "false", paramTargetRelease: "4.19.1", paramTargetReleaseImage: tg.Image,
		paramOSImage: f.BaseOSImage, paramExtensionsImage: f.ExtensionsImage, paramDTKImage: f.DriverToolkitImage}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("upgrade-ahead run (-want +got):\n%s", d)
	}
	if !sort.SliceIsSorted(pr.Spec.Params, func(i, j int) bool { return pr.Spec.Params[i].Name < pr.Spec.Params[j].Name }) {
		t.Errorf("params are not sorted by name: %v", pr.Spec.Params)
	}
}

func TestAheadRunNameFallsBackWhenTheReleaseDoesNotFit(t *testing.T) {
	sum := AheadSum(fpA, aheadTarget("x"))
	for _, tc := range []struct{ version, want string }{
		{"4.19.0-RC.1", "kiln-worker-ahead-4.19.0-rc.1-" + sum[:10]},
		{"4.19.0-0.nightly-2025-01-01-000000-with-a-long-suffix", "kiln-worker-upgrade-ahead-" + sum[:10]},
	} {
		if got := AheadRunName("worker", tc.version, sum); got != tc.want {
			t.Errorf("AheadRunName(worker, %q) = %q, want %q", tc.version, got, tc.want)
		}
	}
}

func TestOutcomeOfAnUpgradeAheadRun(t *testing.T) {
	result := func(name, v string) pipelinev1.PipelineRunResult {
		return pipelinev1.PipelineRunResult{Name: name, Value: *pipelinev1.NewStructuredValues(v)}
	}
	withResults := func(pr *pipelinev1.PipelineRun, rs ...pipelinev1.PipelineRunResult) *pipelinev1.PipelineRun {
		pr.Status.Results = rs
		return pr
	}
	cancelled := run(fpA, "failed", 1)
	cancelled.Status.Conditions[0].Reason, cancelled.Status.Conditions[0].Message = "Cancelled", "PipelineRun was cancelled"
	long := "x" + strings.Repeat("é", maxCause) // byte maxCause falls inside an é
	for _, tc := range []struct {
		name string
		run  *pipelinev1.PipelineRun
		want outcome
	}{
		{"running: not done", run(fpA, "active", 1), outcome{}},
		{"succeeded: ready", run(fpA, "succeeded", 1), outcome{done: true, ready: true}},
		{"failed: the report's stage and cause", withResults(run(fpA, "failed", 1), result(work.ResultFailedStage, "kmod-build"), result(work.ResultFailure, "no such symbol")),
			outcome{done: true, stage: "kmod-build", cause: "no such symbol"}},
		{"cancelled before the report: the condition's reason and message", cancelled,
			outcome{done: true, stage: "Cancelled", cause: "PipelineRun was cancelled"}},
		{"a long cause is cut on a character boundary", withResults(run(fpA, "failed", 1), result(work.ResultFailedStage, "image-build"), result(work.ResultFailure, long)),
			outcome{done: true, stage: "image-build", cause: "x" + strings.Repeat("é", (maxCause-1)/2) + "…"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, outcomeOf(tc.run), cmp.AllowUnexported(outcome{})); d != "" {
				t.Fatalf("outcomeOf (-want +got):\n%s", d)
			}
		})
	}
}

// TestSkipsRollout: the repository's node-image Pipeline skips rollout
// and bootimages for upgrade-ahead runs; a Pipeline without the rollout
// param, or whose rollout or bootimages task is not skipped by it, is
// refused with the task and the rule named.
func TestSkipsRollout(t *testing.T) {
	repo, err := pipeline.LoadPipeline(context.Background(), filepath.Join(env.RepoRoot(), "pipelines", "node-image.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	repo.Namespace = "kiln"
	edit := func(f func(p *pipelinev1.Pipeline)) *pipelinev1.Pipeline {
		p := repo.DeepCopy()
		f(p)
		return p
	}
	task := func(p *pipelinev1.Pipeline, name string) *pipelinev1.PipelineTask {
		for i := range p.Spec.Tasks {
			if p.Spec.Tasks[i].Name == name {
				return &p.Spec.Tasks[i]
			}
		}
		t.Fatalf("Pipeline has no task %s", name)
		return nil
	}
	for _, tc := range []struct {
		name string
		p    *pipelinev1.Pipeline
		want string
	}{
		{"the repository's Pipeline", repo, ""},
		{"no rollout param", edit(func(p *pipelinev1.Pipeline) {
			p.Spec.Params = slices.DeleteFunc(p.Spec.Params, func(ps pipelinev1.ParamSpec) bool { return ps.Name == paramRollout })
		}), `Pipeline kiln/kiln-node-image: spec.params has no "rollout"`},
		{"rollout task without its when expression", edit(func(p *pipelinev1.Pipeline) { task(p, "rollout").When = nil }),
			`Pipeline kiln/kiln-node-image: task rollout has no when expression $(params.rollout) in ["true"]`},
		{"bootimages without its when expression", edit(func(p *pipelinev1.Pipeline) { task(p, "bootimages").When = nil }),
			`Pipeline kiln/kiln-node-image: task bootimages has no when expression $(params.rollout) in ["true"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			if err := skipsRollout(tc.p); err != nil {
				got = err.Error()
			}
			if !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
				t.Fatalf("skipsRollout = %q, want it to start with %q", got, tc.want)
			}
		})
	}
}
