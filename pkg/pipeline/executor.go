package pipeline

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/reconciler/pipeline/dag"
	"github.com/tektoncd/pipeline/pkg/substitution"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Executor runs a Tekton v1 Pipeline on this machine: each step is a local
// process, workspaces are folders and results are files. Scheduling uses
// Tekton's DAG, skipping follows Tekton's rules (a task skipped by `when`
// does not skip its dependents; a task whose result is missing does).
type Executor struct {
	// Tasks are the Tasks a Pipeline's taskRefs name (LoadTasks).
	Tasks map[string]*tektonv1.Task
	// StepBinary runs steps whose command is kiln-steps, and those of a
	// stage's own binary (StageBinaries) as its subcommand unless
	// Commands names a binary for it.
	StepBinary string
	// Commands maps other step commands to executables.
	Commands map[string]string
	// Out receives one progress line per task event; nil discards.
	Out io.Writer
	// Env is added to every step's environment (after this process's).
	Env []string
	// Timeouts are the PipelineRun's timeouts; nil gets Tekton's default
	// (60m for the pipeline).
	Timeouts *tektonv1.TimeoutFields
	// RunName is $(context.pipelineRun.name); empty uses <pipeline>-local.
	RunName string
	// Namespace is $(context.*.namespace); empty uses "default".
	Namespace string
	// KillGrace is how long a cancelled step's process group, or what a
	// step left running in its group when it ended, gets between SIGTERM
	// and SIGKILL; zero means 5s.
	KillGrace time.Duration
	// OnTask, if set, is called as each task starts (StateRunning) and
	// as it ends (its final status), in order, from one goroutine: local
	// mode records with it where an interrupted run stood.
	OnTask func(task, status string)

	mu sync.Mutex // serialises Out
}

// Task states, as $(tasks.X.status) and RunResult show them.
const (
	StateSucceeded = "Succeeded"
	StateFailed    = "Failed"
	StateSkipped   = "Skipped"
	// StateRunning is only reported to OnTask.
	StateRunning = "Running"
)

// TaskResult is one PipelineTask's outcome.
type TaskResult struct {
	Name     string // PipelineTask name
	Task     string // Task name
	Finally  bool
	Status   string // Succeeded, Failed, Skipped; "" if never reached
	Reason   string // Tekton's TaskRun reason or skipping reason
	Message  string // the error of the last attempt
	Attempts int
	Start    time.Time
	Duration time.Duration
	Results  map[string]string
	Dir      string // <runDir>/<name>: step logs and tekton/results
	// Failure is the failed step of the last attempt, when a step failed
	// (not a timeout, a cancel or a bad spec).
	Failure *StepFailure
}

// RunResult is a PipelineRun's outcome.
type RunResult struct {
	Pipeline string
	RunName  string
	// Status is Tekton's PipelineRun reason: Succeeded, Completed (some
	// tasks skipped), Failed, PipelineRunTimeout or Cancelled.
	Status     string
	Succeeded  bool
	FailedTask string // first failed task, DAG before finally
	Message    string
	Tasks      []TaskResult // pipeline order, finally last
	Results    map[string]string
	Start      time.Time
	Duration   time.Duration
	Dir        string
}

// Err is nil for a succeeded run, else an error naming the failed task.
func (r *RunResult) Err() error {
	if r.Succeeded {
		return nil
	}
	if r.FailedTask != "" {
		return fmt.Errorf("PipelineRun %s %s: task %s: %s", r.RunName, r.Status, r.FailedTask, r.Message)
	}
	return fmt.Errorf("PipelineRun %s %s: %s", r.RunName, r.Status, r.Message)
}

// Task returns the result of the PipelineTask name, or nil.
func (r *RunResult) Task(name string) *TaskResult {
	for i := range r.Tasks {
		if r.Tasks[i].Name == name {
			return &r.Tasks[i]
		}
	}
	return nil
}

// LoadTasks loads every *.yaml in dir as a Task (LoadTask), by name.
func LoadTasks(ctx context.Context, dir string) (map[string]*tektonv1.Task, error) {
	paths, err := SpecFiles(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]*tektonv1.Task{}
	for _, p := range paths {
		t, err := LoadTask(ctx, p)
		if err != nil {
			return nil, err
		}
		if _, dup := out[t.Name]; dup {
			return nil, fmt.Errorf("loading Tasks in %s: Task %s is defined twice", dir, t.Name)
		}
		out[t.Name] = t
	}
	return out, nil
}

func (e *Executor) killGrace() time.Duration {
	if e.KillGrace > 0 {
		return e.KillGrace
	}
	return 5 * time.Second
}

func (e *Executor) notify(task, status string) {
	if e.OnTask != nil {
		e.OnTask(task, status)
	}
}

func (e *Executor) printf(format string, args ...any) {
	if e.Out == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	fmt.Fprintf(e.Out, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// Run runs p with params and workspace folders (workspace name → dir) and
// keeps logs and results under runDir. The error is for input that stops
// the run before any task starts (Tekton's validation, unknown Tasks,
// unbound workspaces); a run whose tasks fail returns a RunResult with
// Succeeded false and a nil error (see RunResult.Err).
func (e *Executor) Run(ctx context.Context, p *tektonv1.Pipeline, params map[string]string, workspaces map[string]string, runDir string) (*RunResult, error) {
	r, err := e.prepare(ctx, p, params, workspaces, runDir)
	if err != nil {
		return nil, err
	}
	if r.wd, err = startWatchdog(e.killGrace()); err != nil {
		return nil, fmt.Errorf("starting the watchdog of PipelineRun %s: %w", r.runName, err)
	}
	defer r.wd.stop()
	return r.run(ctx), nil
}

// prepare validates everything a run needs before any process starts.
func (e *Executor) prepare(ctx context.Context, p *tektonv1.Pipeline, params map[string]string, workspaces map[string]string, runDir string) (*run, error) {
	// Steps run in their task folder: every path they get is absolute.
	runDir, err := filepath.Abs(runDir)
	if err != nil {
		return nil, fmt.Errorf("resolving run folder: %w", err)
	}
	abs := map[string]string{}
	for n, dir := range workspaces {
		if abs[n], err = filepath.Abs(dir); err != nil {
			return nil, fmt.Errorf("resolving workspace %q: %w", n, err)
		}
	}
	workspaces = abs
	runName := e.RunName
	if runName == "" {
		runName = p.Name + "-local"
	}
	ns := e.Namespace
	if ns == "" {
		ns = "default"
	}
	// The PipelineRun the cluster would get, defaulted and validated by
	// Tekton's webhook code: timeouts, params, workspace bindings.
	pr := &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: runName, Namespace: ns},
		Spec:       tektonv1.PipelineRunSpec{PipelineSpec: p.Spec.DeepCopy()},
	}
	if e.Timeouts != nil {
		pr.Spec.Timeouts = e.Timeouts.DeepCopy()
	}
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		pr.Spec.Params = append(pr.Spec.Params, tektonv1.Param{Name: n, Value: *tektonv1.NewStructuredValues(params[n])})
	}
	for n := range workspaces {
		pr.Spec.Workspaces = append(pr.Spec.Workspaces, tektonv1.WorkspaceBinding{Name: n, EmptyDir: &corev1.EmptyDirVolumeSource{}})
	}
	pr.SetDefaults(ctx)
	if err := pr.Validate(ctx); err != nil {
		return nil, fmt.Errorf("validating PipelineRun %s of Pipeline %s: %w", runName, p.Name, err)
	}
	if err := missingParams(p.Spec.Params, pr.Spec.Params); err != nil {
		return nil, fmt.Errorf("validating PipelineRun %s of Pipeline %s: %w", runName, p.Name, err)
	}
	if err := checkWorkspaceBindings(p, workspaces); err != nil {
		return nil, fmt.Errorf("validating PipelineRun %s of Pipeline %s: %w", runName, p.Name, err)
	}
	if err := CheckPipelineTasks(p, e.Tasks); err != nil {
		return nil, err
	}
	r := &run{
		e: e, p: p, runName: runName, ns: ns, dir: runDir, workspaces: workspaces,
		params: paramValues(p.Spec.Params, pr.Spec.Params),
		state:  map[string]*TaskResult{}, pts: map[string]tektonv1.PipelineTask{},
		timeouts: pr.Spec.Timeouts,
	}
	all := append(append([]tektonv1.PipelineTask{}, p.Spec.Tasks...), p.Spec.Finally...)
	for i, pt := range all {
		t, err := e.resolveTask(pt)
		if err != nil {
			return nil, fmt.Errorf("Pipeline %s: %w", p.Name, err)
		}
		r.order = append(r.order, pt.Name)
		r.pts[pt.Name] = pt
		r.state[pt.Name] = &TaskResult{Name: pt.Name, Task: t.Name, Finally: i >= len(p.Spec.Tasks), Dir: filepath.Join(runDir, pt.Name)}
	}
	g, err := dag.Build(tektonv1.PipelineTaskList(p.Spec.Tasks), tektonv1.PipelineTaskList(p.Spec.Tasks).Deps())
	if err != nil {
		return nil, fmt.Errorf("building the DAG of Pipeline %s: %w", p.Name, err)
	}
	r.graph = g
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating run folder: %w", err)
	}
	return r, nil
}

// resolveTask finds a PipelineTask's Task and checks that every step can
// run as a local process.
func (e *Executor) resolveTask(pt tektonv1.PipelineTask) (*tektonv1.Task, error) {
	var t *tektonv1.Task
	switch {
	case pt.TaskRef != nil:
		t = e.Tasks[pt.TaskRef.Name]
		if t == nil {
			return nil, fmt.Errorf("task %s: Task %s not found", pt.Name, pt.TaskRef.Name)
		}
	case pt.TaskSpec != nil:
		t = &tektonv1.Task{ObjectMeta: metav1.ObjectMeta{Name: pt.Name}, Spec: pt.TaskSpec.TaskSpec}
	default:
		return nil, fmt.Errorf("task %s: neither taskRef nor taskSpec (pipelines in pipelines are not supported locally)", pt.Name)
	}
	if pt.IsMatrixed() {
		return nil, fmt.Errorf("task %s: matrix is not supported locally", pt.Name)
	}
	for _, w := range pt.When {
		if w.CEL != "" {
			return nil, fmt.Errorf("task %s: when.cel is not supported locally", pt.Name)
		}
	}
	if len(t.Spec.Sidecars) > 0 {
		return nil, fmt.Errorf("task %s: Task %s has sidecars, which do not run locally", pt.Name, t.Name)
	}
	for i, s := range t.Spec.Steps {
		where := fmt.Sprintf("task %s: Task %s steps[%d] (%s)", pt.Name, t.Name, i, s.Name)
		if s.Script != "" || len(s.Command) == 0 {
			return nil, fmt.Errorf("%s: a local step needs a command and no script", where)
		}
		if _, err := e.command(s.Command[0]); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		for _, env := range s.Env {
			if env.ValueFrom != nil {
				return nil, fmt.Errorf("%s: env %s: valueFrom does not resolve locally", where, env.Name)
			}
		}
	}
	return t, nil
}

// checkWorkspaceBindings is Tekton's ValidateWorkspaceBindings for folders:
// every non-optional declared workspace is bound, nothing else is, and the
// folders exist.
func checkWorkspaceBindings(p *tektonv1.Pipeline, bound map[string]string) error {
	declared := map[string]bool{}
	for _, w := range p.Spec.Workspaces {
		declared[w.Name] = true
		if _, ok := bound[w.Name]; !ok && !w.Optional {
			return fmt.Errorf("pipeline requires workspace with name %q be provided by pipelinerun", w.Name)
		}
	}
	for n, dir := range bound {
		if !declared[n] {
			return fmt.Errorf("workspace %q is not declared by Pipeline %s", n, p.Name)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("workspace %q: %s is not a folder", n, dir)
		}
	}
	return nil
}

// pipelineResults resolves spec.results; a result whose task did not
// produce it is left out, as Tekton leaves it out of the status.
func (r *run) pipelineResults(repl map[string]string) map[string]string {
	out := map[string]string{}
	for _, res := range r.p.Spec.Results {
		v := substitution.ApplyReplacements(res.Value.StringVal, repl)
		if strings.Contains(v, "$(tasks.") || strings.Contains(v, "$(finally.") {
			continue
		}
		out[res.Name] = v
	}
	return out
}
