package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/container"
	"github.com/tektoncd/pipeline/pkg/result"
)

// MaxResultBytes is the size of a container's termination message, which is
// where Tekton's entrypoint puts every result the Task has written so far
// after each step (results-from: termination-message, the default).
const MaxResultBytes = 4096

// startedAt stands in for the "StartedAt" entry the entrypoint adds to every
// termination message (Tekton's longest timestamp form).
const startedAt = "0000-00-00T00:00:00.000+00:00"

// tektonPrefix matches /tekton/ at the start of a value or after "=", ":"
// or ",", where a flag or a list hands a path over.
var tektonPrefix = regexp.MustCompile(`(^|[=:,])/tekton/`)

// Causes of a cancelled context, to tell a task's own timeout from the
// PipelineRun's.
var (
	errTaskTimeout     = errors.New("task timeout reached")
	errPipelineTimeout = errors.New("PipelineRun timeout reached")
	errTasksTimeout    = errors.New("PipelineRun tasks timeout reached")
	errFinallyTimeout  = errors.New("PipelineRun finally timeout reached")
)

// errResultBudget marks the Tekton termination message overflow.
var errResultBudget = errors.New("results exceed Tekton's termination message budget")

// taskRun is one PipelineTask's TaskRun, resolved: its Task spec (step
// template merged), params and bound workspace folders.
type taskRun struct {
	name      string // PipelineTask name
	runName   string // context.taskRun.name
	taskName  string // Task name
	spec      *tektonv1.TaskSpec
	params    tektonv1.Params
	bound     map[string]string
	dir       string // <runDir>/<name>
	timeout   time.Duration
	retries   int
	namespace string
	wd        *watchdog
}

// attempt runs the steps once. It returns the results, the Tekton reason
// and an error when the attempt failed.
func (e *Executor) attempt(ctx context.Context, tr *taskRun, retry int) (map[string]string, tektonv1.TaskRunReason, error) {
	tekton := filepath.Join(tr.dir, "tekton")
	resultsDir := filepath.Join(tekton, "results")
	// A retry is a new pod: it starts with no results.
	if err := os.RemoveAll(tekton); err != nil {
		return nil, tektonv1.TaskRunReasonFailed, fmt.Errorf("clearing %s: %w", tekton, err)
	}
	if err := os.MkdirAll(resultsDir, 0o755); err != nil {
		return nil, tektonv1.TaskRunReasonFailed, fmt.Errorf("creating %s: %w", resultsDir, err)
	}
	if tr.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, tr.timeout, errTaskTimeout)
		defer cancel()
	}
	r := taskReplacements(tr.spec, tr.params, tr.taskName, tr.runName, tr.namespace, retry, tr.bound)
	steps := tr.spec.DeepCopy().Steps
	isolated := isolatedWorkspaces(tr.spec)
	for i := range steps {
		sr := stepReplacements(r, isolated, steps[i])
		container.ApplyStepReplacements(&steps[i], sr.str, sr.arr)
	}
	results := map[string]string{}
	for i, s := range steps {
		err := e.step(ctx, tr, &steps[i], tekton, resultsDir, retry)
		if err == nil || s.OnError == tektonv1.Continue {
			var rerr error
			results, rerr = readResults(tr, resultsDir, s.Name)
			if rerr != nil {
				return results, tektonv1.TaskRunReasonResultLargerThanAllowedLimit, rerr
			}
		}
		if err != nil && s.OnError != tektonv1.Continue {
			if context.Cause(ctx) == errTaskTimeout {
				return results, tektonv1.TaskRunReasonTimedOut, fmt.Errorf("TaskRun %s failed to finish within %s", tr.runName, tr.timeout)
			}
			if ctx.Err() != nil {
				return results, tektonv1.TaskRunReasonCancelled, fmt.Errorf("TaskRun %s cancelled in step %s: %w", tr.runName, s.Name, context.Cause(ctx))
			}
			return results, tektonv1.TaskRunReasonFailed, newStepFailure(s.Name, i, len(steps), logPath(tr.dir, s.Name, retry), err)
		}
	}
	return results, tektonv1.TaskRunReasonSuccessful, nil
}

func logPath(dir, step string, retry int) string {
	if retry == 0 {
		return filepath.Join(dir, step+".log")
	}
	return filepath.Join(dir, fmt.Sprintf("%s.retry-%d.log", step, retry))
}

// step runs one step as a local process.
func (e *Executor) step(ctx context.Context, tr *taskRun, s *tektonv1.Step, tekton, resultsDir string, retry int) error {
	rewrite := func(v string) string { return tektonPrefix.ReplaceAllString(v, "${1}"+tekton+"/") }
	argv := append(append([]string{}, s.Command...), s.Args...)
	for i := range argv {
		argv[i] = rewrite(argv[i])
	}
	bin, err := e.command(argv[0])
	if err != nil {
		return err
	}
	argv = e.stageArgs(argv)
	if s.Timeout != nil && s.Timeout.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout.Duration)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, bin, argv[1:]...)
	// The process inherits this one's environment (PATH, HOME, proxies):
	// on a machine there is no image to bring its own. KILN_RESULTS_DIR is
	// where kiln-steps writes results when a Task passes no --results-dir.
	cmd.Env = append(append(os.Environ(), e.Env...), "KILN_RESULTS_DIR="+resultsDir)
	for _, env := range s.Env {
		cmd.Env = append(cmd.Env, env.Name+"="+rewrite(env.Value))
	}
	cmd.Dir = tr.dir
	if s.WorkingDir != "" {
		cmd.Dir = rewrite(s.WorkingDir)
		if err := os.MkdirAll(cmd.Dir, 0o755); err != nil {
			return fmt.Errorf("creating workingDir: %w", err)
		}
	}
	log, err := os.Create(logPath(tr.dir, s.Name, retry))
	if err != nil {
		return fmt.Errorf("creating step log: %w", err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	wait, err := startStep(cmd, e.killGrace(), tr.wd)
	if err != nil {
		return err
	}
	return wait()
}

// command maps a step's command to a local executable, made absolute:
// steps run in their task folder, where a relative bin/kiln-steps would
// name nothing.
func (e *Executor) command(name string) (string, error) {
	p, ok := e.Commands[name]
	if _, stage := StageBinaries[name]; !ok && (name == StepBinary || stage) && e.StepBinary != "" {
		p, ok = e.StepBinary, true
	}
	if !ok {
		return "", fmt.Errorf("command %q has no local binary (set Executor.StepBinary or Executor.Commands)", name)
	}
	if !strings.ContainsRune(p, os.PathSeparator) {
		return exec.LookPath(p)
	}
	return filepath.Abs(p)
}

// stageArgs returns argv as StepBinary runs it: a stage's own binary
// with no local binary in Commands runs as `kiln-steps <stage> <args>`,
// the same stage, so local mode needs only --steps.
func (e *Executor) stageArgs(argv []string) []string {
	stage, ok := StageBinaries[argv[0]]
	if _, own := e.Commands[argv[0]]; !ok || own {
		return argv
	}
	return append([]string{StepBinary, stage}, argv[1:]...)
}

// readResults reads the declared results written so far and checks that
// the termination message the entrypoint would write after step fits.
func readResults(tr *taskRun, dir, step string) (map[string]string, error) {
	out := map[string]string{}
	msg := []result.RunResult{{Key: "StartedAt", Value: startedAt, ResultType: result.InternalTektonResultType}}
	largest := ""
	for _, r := range tr.spec.Results {
		b, err := os.ReadFile(filepath.Join(dir, r.Name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("reading result %s of task %s: %w", r.Name, tr.name, err)
		}
		out[r.Name] = string(b)
		msg = append(msg, result.RunResult{Key: r.Name, Value: string(b), ResultType: result.TaskRunResultType})
		if largest == "" || len(b) > len(out[largest]) {
			largest = r.Name
		}
	}
	b, _ := json.Marshal(msg) // strings and ints only
	if len(b) > MaxResultBytes {
		return out, fmt.Errorf("task %s, step %s: %w: %d bytes > %d (largest result %s is %d bytes)",
			tr.name, step, errResultBudget, len(b), MaxResultBytes, largest, len(out[largest]))
	}
	return out, nil
}
