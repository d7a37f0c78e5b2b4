package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/reconciler/pipeline/dag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/pkg/work"
)

// errCancelled is the cause when the caller cancels the run.
var errCancelled = errors.New("PipelineRun was cancelled")

// run is one PipelineRun in progress. Only the scheduling goroutine
// (run.run) writes state; task goroutines hand their outcome back on a
// channel.
type run struct {
	e          *Executor
	p          *tektonv1.Pipeline
	runName    string
	ns         string
	dir        string
	workspaces map[string]string
	params     replacements
	timeouts   *tektonv1.TimeoutFields
	graph      *dag.Graph
	order      []string
	pts        map[string]tektonv1.PipelineTask
	state      map[string]*TaskResult
	wd         *watchdog
}

type outcome struct {
	name string
	res  TaskResult
}

func withTimeout(ctx context.Context, d *metav1.Duration, cause error) (context.Context, context.CancelFunc) {
	if d == nil || d.Duration <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, d.Duration, cause)
}

func (r *run) run(parent context.Context) *RunResult {
	start := time.Now()
	r.e.printf("PipelineRun %s (Pipeline %s) started, folder %s", r.runName, r.p.Name, r.dir)
	// The caller's cancellation gets its own cause; deriving from parent
	// directly would hand its DeadlineExceeded to every child instead.
	cctx, cancelAll := context.WithCancelCause(context.WithoutCancel(parent))
	defer cancelAll(nil)
	stop := context.AfterFunc(parent, func() { cancelAll(errCancelled) })
	defer stop()
	pctx, cancelP := withTimeout(cctx, r.timeouts.Pipeline, errPipelineTimeout)
	defer cancelP()
	tctx, cancelT := withTimeout(pctx, r.timeouts.Tasks, errTasksTimeout)
	r.schedule(tctx, false)
	tasksTimedOut := errors.Is(context.Cause(tctx), errTasksTimeout)
	cancelT()
	fctx, cancelF := withTimeout(pctx, r.timeouts.Finally, errFinallyTimeout)
	r.schedule(fctx, true)
	cancelF()

	out := &RunResult{Pipeline: r.p.Name, RunName: r.runName, Start: start, Duration: time.Since(start), Dir: r.dir}
	skipped := false
	for _, n := range r.order {
		st := r.state[n]
		out.Tasks = append(out.Tasks, *st)
		if st.Status == StateFailed && out.FailedTask == "" && (st.Finally || r.pts[n].OnError != tektonv1.PipelineTaskContinue) {
			out.FailedTask, out.Message = n, st.Message
		}
		skipped = skipped || st.Status == StateSkipped
	}
	switch cause := context.Cause(pctx); {
	case errors.Is(cause, errPipelineTimeout):
		out.Status, out.Message = string(tektonv1.PipelineRunReasonTimedOut), fmt.Sprintf("PipelineRun %s failed to finish within %s", r.runName, r.timeouts.Pipeline.Duration)
	case tasksTimedOut:
		out.Status, out.Message = string(tektonv1.PipelineRunReasonTimedOut), fmt.Sprintf("PipelineRun %s failed due to tasks failed to finish within %s", r.runName, r.timeouts.Tasks.Duration)
	case errors.Is(cause, errCancelled):
		out.Status, out.Message = string(tektonv1.PipelineRunReasonCancelled), "PipelineRun was cancelled"
	case out.FailedTask != "":
		out.Status = string(tektonv1.PipelineRunReasonFailed)
	case skipped:
		out.Status, out.Succeeded = string(tektonv1.PipelineRunReasonCompleted), true
	default:
		out.Status, out.Succeeded = string(tektonv1.PipelineRunReasonSuccessful), true
	}
	out.Results = r.pipelineResults(r.replacements(false).str)
	line := fmt.Sprintf("PipelineRun %s %s in %s", r.runName, out.Status, out.Duration.Round(time.Millisecond))
	if out.FailedTask != "" {
		line += " (task " + out.FailedTask + " failed)"
	}
	if len(out.Results) > 0 {
		line += ": " + summarize(out.Results)
	}
	r.e.printf("%s", line)
	return out
}

// schedule runs the DAG tasks (or the finally tasks) to completion:
// Tekton's candidate set from dag.GetCandidateTasks, each candidate either
// skipped by Tekton's rules or started, until nothing runs.
func (r *run) schedule(ctx context.Context, finally bool) {
	done := make(chan outcome)
	running := 0
	started := map[string]bool{}
	for {
		for progressed := true; progressed; {
			progressed = false
			for _, n := range r.candidates(finally) {
				if started[n] {
					continue
				}
				started[n] = true
				progressed = true
				pt, reason, msg := r.evaluate(ctx, n, finally)
				st := r.state[n]
				switch {
				case reason == invalidResultRef:
					st.Status, st.Reason, st.Message = StateFailed, string(tektonv1.PipelineRunReasonInvalidTaskResultReference), msg
					r.e.printf("%-12s %s (%s): %s", n, st.Status, st.Reason, msg)
					r.e.notify(n, st.Status)
				case reason != "":
					st.Status, st.Reason = StateSkipped, reason
					r.e.printf("%-12s %s: %s", n, st.Status, st.Reason)
					r.e.notify(n, st.Status)
				default:
					running++
					r.e.notify(n, StateRunning)
					go func() { done <- outcome{n, r.execute(ctx, pt)} }()
				}
			}
		}
		if running == 0 {
			return
		}
		o := <-done
		running--
		*r.state[o.name] = o.res
		r.e.notify(o.name, o.res.Status)
	}
}

// candidates lists, in pipeline order, the tasks Tekton would consider now.
func (r *run) candidates(finally bool) []string {
	var names []string
	if finally {
		for _, pt := range r.p.Spec.Finally {
			names = append(names, pt.Name)
		}
		return names
	}
	var doneTasks []string
	for _, pt := range r.p.Spec.Tasks {
		if r.state[pt.Name].Status != "" {
			doneTasks = append(doneTasks, pt.Name)
		}
	}
	c, err := dag.GetCandidateTasks(r.graph, doneTasks...)
	if err != nil { // done tasks always have done parents here
		panic(err)
	}
	for _, pt := range r.p.Spec.Tasks {
		if c.Has(pt.Name) {
			names = append(names, pt.Name)
		}
	}
	return names
}

const invalidResultRef = "invalid result reference"

// replacements are the pipeline-level substitutions known now: params,
// results of succeeded tasks and, for finally tasks, task statuses.
func (r *run) replacements(finally bool) replacements {
	repl := newReplacements()
	for k, v := range r.params.str {
		repl.str[k] = v
	}
	for k, v := range r.params.arr {
		repl.arr[k] = v
	}
	for k, v := range r.params.obj {
		repl.obj[k] = v
	}
	for _, n := range r.order {
		st := r.state[n]
		if st.Status == StateSucceeded {
			for k, v := range st.Results {
				key := resultKey(n, k)
				if st.Finally {
					// Pipeline results name a finally task's results
					// $(finally.<task>.results.<name>).
					key = "finally." + n + ".results." + k
				}
				repl.str[key] = v
			}
		}
	}
	for _, w := range r.p.Spec.Workspaces {
		_, ok := r.workspaces[w.Name]
		repl.str["workspaces."+w.Name+".bound"] = fmt.Sprint(ok)
	}
	if finally {
		// pipelinerun/resources GetPipelineTaskStatus: Succeeded, Failed or
		// None (skipped), and the aggregate tasks.status.
		agg := string(tektonv1.PipelineRunReasonSuccessful)
		for _, pt := range r.p.Spec.Tasks {
			st := r.state[pt.Name]
			s := "None"
			switch st.Status {
			case StateSucceeded:
				s = StateSucceeded
			case StateFailed:
				s = StateFailed
				agg = string(tektonv1.PipelineRunReasonFailed)
			case StateSkipped:
				if agg != string(tektonv1.PipelineRunReasonFailed) {
					agg = string(tektonv1.PipelineRunReasonCompleted)
				}
			}
			repl.str["tasks."+pt.Name+".status"] = s
			// A skipped task has no TaskRun, so no condition reason.
			reason := st.Reason
			if st.Status == StateSkipped {
				reason = ""
			}
			repl.str["tasks."+pt.Name+".reason"] = reason
		}
		repl.str[tektonv1.PipelineTasksAggregateStatus] = agg
	}
	return repl
}

// evaluate decides whether a candidate runs, in the order of Tekton's
// ResolvedPipelineTask.skip (DAG) and IsFinallySkipped (finally). It
// returns the substituted PipelineTask, or a skipping reason.
func (r *run) evaluate(ctx context.Context, name string, finally bool) (tektonv1.PipelineTask, string, string) {
	pt := r.pts[name]
	if err := context.Cause(ctx); err != nil {
		switch {
		case errors.Is(err, errPipelineTimeout):
			return pt, string(tektonv1.PipelineTimedOutSkip), ""
		case errors.Is(err, errTasksTimeout):
			return pt, string(tektonv1.TasksTimedOutSkip), ""
		case errors.Is(err, errFinallyTimeout):
			return pt, string(tektonv1.FinallyTimedOutSkip), ""
		default:
			return pt, errCancelled.Error(), ""
		}
	}
	if !finally && r.stopping() {
		return pt, string(tektonv1.StoppingSkip), ""
	}
	repl := r.replacements(finally)
	pipelineContext(repl, r.p.Name, r.runName, r.ns, "", &pt)
	resolved := applyToPipelineTask(pt, repl)
	missing := ""
	for _, ref := range resultRefs(&pt) {
		st := r.state[ref.PipelineTask]
		if st == nil {
			continue
		}
		if st.Status == StateSucceeded {
			if _, ok := st.Results[ref.Result]; !ok {
				return pt, invalidResultRef, fmt.Sprintf("Could not find result with name %s for task %s", ref.Result, ref.PipelineTask)
			}
			continue
		}
		missing = ref.PipelineTask
	}
	whenFalse := missing == "" && !resolved.When.AllowsExecution(nil)
	if finally {
		if missing != "" {
			return pt, string(tektonv1.MissingResultsSkip), ""
		}
		if whenFalse {
			return pt, string(tektonv1.WhenExpressionsSkip), ""
		}
		return resolved, "", ""
	}
	if whenFalse {
		return pt, string(tektonv1.WhenExpressionsSkip), ""
	}
	for _, parent := range r.graph.Nodes[name].Prev {
		st := r.state[parent.Key]
		if st.Status == StateSkipped && st.Reason != string(tektonv1.WhenExpressionsSkip) {
			return pt, string(tektonv1.ParentTasksSkip), ""
		}
	}
	if missing != "" {
		return pt, string(tektonv1.MissingResultsSkip), ""
	}
	return resolved, "", ""
}

// stopping is Tekton's PipelineRunFacts.IsStopping: a DAG task failed
// and its onError is not continue.
func (r *run) stopping() bool {
	for _, pt := range r.p.Spec.Tasks {
		if r.state[pt.Name].Status == StateFailed && pt.OnError != tektonv1.PipelineTaskContinue {
			return true
		}
	}
	return false
}

// execute runs one TaskRun with its retries.
func (r *run) execute(ctx context.Context, pt tektonv1.PipelineTask) TaskResult {
	st := *r.state[pt.Name]
	st.Start = time.Now()
	var task *tektonv1.Task
	if pt.TaskRef != nil {
		task = r.e.Tasks[pt.TaskRef.Name]
	} else {
		task = &tektonv1.Task{Spec: pt.TaskSpec.TaskSpec}
	}
	fail := func(err error) TaskResult {
		st.Status, st.Reason, st.Message, st.Duration = StateFailed, string(tektonv1.TaskRunReasonFailed), err.Error(), time.Since(st.Start)
		r.e.printf("%-12s %s (%s) after %s: %s", pt.Name, st.Status, st.Reason, st.Duration.Round(time.Millisecond), st.Message)
		return st
	}
	spec := task.Spec.DeepCopy()
	steps, err := tektonv1.MergeStepsWithStepTemplate(spec.StepTemplate, spec.Steps)
	if err != nil {
		return fail(fmt.Errorf("merging stepTemplate: %w", err))
	}
	spec.Steps = steps
	tr := &taskRun{
		name: pt.Name, runName: r.runName + "-" + pt.Name, taskName: task.Name, spec: spec,
		params: pt.Params, bound: map[string]string{}, dir: st.Dir, retries: pt.Retries, namespace: r.ns, wd: r.wd,
	}
	if pt.Timeout != nil {
		tr.timeout = pt.Timeout.Duration
	}
	for _, b := range pt.Workspaces {
		dir, ok := r.workspaces[b.Workspace]
		if !ok { // an optional Pipeline workspace left unbound
			continue
		}
		dir = filepath.Join(dir, b.SubPath)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fail(fmt.Errorf("creating workspace %s subPath: %w", b.Name, err))
		}
		tr.bound[b.Name] = dir
	}
	if err := os.MkdirAll(tr.dir, 0o755); err != nil {
		return fail(fmt.Errorf("creating task folder: %w", err))
	}
	r.e.printf("%-12s started (Task %s)", pt.Name, task.Name)
	for attempt := 0; ; attempt++ {
		st.Attempts = attempt + 1
		results, reason, err := r.e.attempt(ctx, tr, attempt)
		st.Results, st.Reason = results, string(reason)
		if err == nil {
			st.Status, st.Message, st.Duration = StateSucceeded, "", time.Since(st.Start)
			r.e.printf("%-12s %s in %s %s", pt.Name, st.Status, st.Duration.Round(time.Millisecond), summarize(results))
			return st
		}
		st.Message, st.Failure = err.Error(), nil
		if f := (*StepFailure)(nil); errors.As(err, &f) {
			st.Failure = f
		}
		if attempt >= tr.retries || ctx.Err() != nil {
			break
		}
		r.e.printf("%-12s attempt %d of %d failed (%s): %s; retrying", pt.Name, attempt+1, tr.retries+1, reason, err)
	}
	st.Status, st.Duration = StateFailed, time.Since(st.Start)
	if st.Failure == nil {
		r.e.printf("%-12s %s (%s) after %s: %s", pt.Name, st.Status, st.Reason, st.Duration.Round(time.Millisecond), st.Message)
		return st
	}
	// kiln's steps record their cause where the report reads it; local
	// mode prints the same words.
	if dir, ok := tr.bound["work"]; ok {
		st.Failure.Cause = work.Workspace{Root: dir}.ReadCause(pt.Name)
	}
	var b strings.Builder
	st.Failure.Describe(&b, pt.Name, task.Name)
	r.e.printf("%-12s %s (%s) after %s:\n%s", pt.Name, st.Status, st.Reason, st.Duration.Round(time.Millisecond), strings.TrimRight(b.String(), "\n"))
	return st
}
