package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// syncBuffer is an io.Writer safe for the executor's concurrent tasks.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testExecutor runs steps with the test binary as "helper".
func testExecutor(t *testing.T) (*Executor, *syncBuffer, string) {
	t.Helper()
	tasks, err := LoadTasks(context.Background(), "testdata/exec/tasks")
	if err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(t.TempDir(), "trace")
	out := &syncBuffer{}
	return &Executor{
		Tasks:     tasks,
		Commands:  map[string]string{"helper": os.Args[0]},
		Env:       []string{"KILN_EXEC_HELPER=1", "KILN_TRACE=" + trace},
		Out:       out,
		KillGrace: time.Second,
	}, out, trace
}

// traceEvents maps "start a" / "end a" to the time the helper logged it.
func traceEvents(t *testing.T, path string) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ev := map[string]int64{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var what, name string
		var at int64
		if _, err := fmt.Sscan(l, &what, &name, &at); err != nil {
			t.Fatalf("trace line %q: %v", l, err)
		}
		ev[what+" "+name] = at
	}
	return ev
}

func statusOf(res *RunResult) map[string]string {
	got := map[string]string{}
	for _, tr := range res.Tasks {
		got[tr.Name] = tr.Status + "/" + tr.Reason
	}
	return got
}

func TestRun(t *testing.T) {
	const (
		ok      = "Succeeded/Succeeded"
		failed  = "Failed/Failed"
		whenOff = "Skipped/When Expressions evaluated to false"
	)
	cases := []struct {
		pipeline   string
		params     map[string]string
		workspaces []string
		timeouts   *tektonv1.TimeoutFields
		status     string
		failedTask string
		tasks      map[string]string
		results    map[string]map[string]string
		pipeResult map[string]string
		check      func(t *testing.T, res *RunResult, trace map[string]int64, out string, ws map[string]string)
	}{{
		pipeline: "dag", status: "Succeeded",
		tasks:      map[string]string{"a": ok, "b": ok, "c": ok, "d": ok},
		results:    map[string]map[string]string{"d": {"OUT": "b-saw-from-a+c"}},
		pipeResult: map[string]string{"D": "b-saw-from-a+c"},
		check: func(t *testing.T, res *RunResult, ev map[string]int64, out string, _ map[string]string) {
			for _, before := range [][2]string{{"end a", "start b"}, {"end a", "start c"}, {"end b", "start d"}, {"end c", "start d"}} {
				if ev[before[0]] == 0 || ev[before[0]] > ev[before[1]] {
					t.Errorf("%s at %d, want before %s at %d", before[0], ev[before[0]], before[1], ev[before[1]])
				}
			}
			// b and c do not depend on each other: they run at once.
			if ev["start b"] > ev["end c"] || ev["start c"] > ev["end b"] {
				t.Errorf("b and c did not overlap: %v", ev)
			}
			log, err := os.ReadFile(filepath.Join(res.Dir, "a", "run.log"))
			if err != nil || !strings.Contains(string(log), "helper a: args") || !strings.Contains(string(log), "helper a: to stderr") {
				t.Errorf("a/run.log = %q, %v; want stdout and stderr", log, err)
			}
			for _, want := range []string{"a            started (Task t-helper)", "d            Succeeded in", "OUT=b-saw-from-a+c", "PipelineRun p-dag-local Succeeded in"} {
				if !strings.Contains(out, want) {
					t.Errorf("progress lacks %q", want)
				}
			}
		},
	}, {
		pipeline: "when", status: "Completed",
		tasks: map[string]string{
			"a": ok, "b": whenOff, "c": ok, "g": ok,
			"d": "Skipped/Results were missing", "e": "Skipped/Parent Tasks were skipped", "f": ok,
		},
		results: map[string]map[string]string{"f": {"OUT": "b:None/ c:Succeeded d:None all:Completed"}},
	}, {
		pipeline: "fail", status: "Failed", failedTask: "a",
		tasks: map[string]string{
			"a": failed, "b": "Skipped/PipelineRun was stopping", "c": ok, "x": "Skipped/PipelineRun was stopping",
			"f": ok, "g": "Skipped/Results were missing",
		},
		results:    map[string]map[string]string{"f": {"OUT": "a:Failed b:None c:Succeeded x:None all:Failed"}},
		pipeResult: map[string]string{"F": "a:Failed b:None c:Succeeded x:None all:Failed"},
		check: func(t *testing.T, res *RunResult, _ map[string]int64, out string, _ map[string]string) {
			if _, ok := res.Results["G"]; ok {
				t.Errorf("result G of a finally task that never ran: %q", res.Results["G"])
			}
			if err := res.Err(); err == nil || !strings.Contains(err.Error(), "task a") || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "a/run.log") {
				t.Errorf("Err() = %v, want task a, its exit status and log", err)
			}
			// Local mode's output names the task, the step, the exit code and
			// the log's last lines, then its path, in that order.
			log := filepath.Join(res.Dir, "a", "run.log")
			want := []string{"a            Failed (Failed) after", "  task a (Task t-helper), step run (1 of 1): exit code 3",
				"  last 2 lines of its log:", "    | helper a: args", "    | helper a: to stderr", "  log: " + log}
			at := 0
			for _, w := range want {
				i := strings.Index(out[at:], w)
				if i < 0 {
					t.Fatalf("progress lacks %q after offset %d:\n%s", w, at, out)
				}
				at += i + len(w)
			}
			if f := res.Task("a").Failure; f == nil || f.ExitCode != 3 || f.Log != log {
				t.Errorf("Task(a).Failure = %+v, want exit code 3 and log %s", f, log)
			}
		},
	}, {
		pipeline: "retries", status: "Failed", failedTask: "broken",
		tasks:   map[string]string{"flaky": ok, "broken": failed},
		results: map[string]map[string]string{"flaky": {"OUT": "ok"}},
		check: func(t *testing.T, res *RunResult, _ map[string]int64, _ string, _ map[string]string) {
			if a := res.Task("flaky").Attempts; a != 3 {
				t.Errorf("flaky attempts = %d, want 3", a)
			}
			if a := res.Task("broken").Attempts; a != 2 {
				t.Errorf("broken attempts = %d, want 2", a)
			}
			for _, f := range []string{"run.log", "run.retry-1.log", "run.retry-2.log"} {
				if _, err := os.Stat(filepath.Join(res.Dir, "flaky", f)); err != nil {
					t.Error(err)
				}
			}
		},
	}, {
		pipeline: "timeout", status: "Failed", failedTask: "slow",
		tasks: map[string]string{"slow": "Failed/TaskRunTimeout"},
		check: func(t *testing.T, res *RunResult, _ map[string]int64, _ string, _ map[string]string) {
			if d := res.Task("slow").Duration; d > 10*time.Second {
				t.Errorf("slow ran %s; the 500ms timeout did not stop the step", d)
			}
		},
	}, {
		pipeline: "pipeline-timeout", status: "PipelineRunTimeout", failedTask: "slow",
		timeouts: &tektonv1.TimeoutFields{Pipeline: &metav1.Duration{Duration: time.Second}},
		tasks: map[string]string{
			"slow": "Failed/TaskRunCancelled", "after": "Skipped/PipelineRun timeout has been reached",
			"f": "Skipped/PipelineRun timeout has been reached",
		},
		check: func(t *testing.T, res *RunResult, _ map[string]int64, _ string, _ map[string]string) {
			if res.Duration > 10*time.Second {
				t.Errorf("run took %s; the 1s pipeline timeout did not stop it", res.Duration)
			}
		},
	}, {
		pipeline: "big", status: "Failed", failedTask: "big",
		tasks: map[string]string{"big": "Failed/TaskRunResultLargerThanAllowedLimit", "fits": ok},
		check: func(t *testing.T, res *RunResult, _ map[string]int64, _ string, _ map[string]string) {
			msg := res.Task("big").Message
			for _, want := range []string{"task big", "largest result BIG is 4100 bytes", "> 4096"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			if n := len(res.Task("fits").Results["BIG"]); n != 3900 {
				t.Errorf("fits BIG = %d bytes, want 3900", n)
			}
		},
	}, {
		pipeline: "params", status: "Succeeded", params: map[string]string{"who": "world"}, workspaces: []string{"work"},
		tasks: map[string]string{"default-pipeline": ok, "default-task": ok, "steps": ok},
		results: map[string]map[string]string{
			"default-pipeline": {"OUT": "hi world"},
			"default-task":     {"OUT": `hello env=hello bound=false work=""`},
		},
		pipeResult: map[string]string{"SAID": "hi world"},
		check: func(t *testing.T, res *RunResult, _ map[string]int64, _ string, ws map[string]string) {
			if b, err := os.ReadFile(filepath.Join(ws["work"], "sub", "said")); err != nil || string(b) != "hi world" {
				t.Errorf("work/sub/said = %q, %v; want the greeting written through the workspace subPath", b, err)
			}
			steps := res.Task("steps").Results
			want := "p-params-local cwd=" + filepath.Join(res.Dir, "steps", "tekton", "scratch")
			if steps["OUT"] != "p-params-local" || steps["SECOND"] != want {
				t.Errorf("steps results = %q, want OUT from context and SECOND %q", steps, want)
			}
		},
	}, {
		// timeouts.tasks cancels the DAG, finally still runs, and the run
		// is a PipelineRunTimeout as Tekton reports it.
		pipeline: "pipeline-timeout", status: "PipelineRunTimeout", failedTask: "slow",
		timeouts: &tektonv1.TimeoutFields{Pipeline: &metav1.Duration{Duration: time.Minute}, Tasks: &metav1.Duration{Duration: time.Second}},
		tasks: map[string]string{
			"slow": "Failed/TaskRunCancelled", "after": "Skipped/PipelineRun Tasks timeout has been reached", "f": ok,
		},
	}, {
		// A failure with onError: continue neither stops the DAG nor fails
		// the run; finally still sees it as Failed.
		pipeline: "onerror", status: "Succeeded",
		tasks:   map[string]string{"a": failed, "b": ok, "f": ok},
		results: map[string]map[string]string{"f": {"OUT": "a:Failed all:Failed"}},
	}, {
		// An embedded taskSpec sees pipeline variables; its own param wins.
		pipeline: "embedded", status: "Succeeded",
		tasks:   map[string]string{"inline": ok},
		results: map[string]map[string]string{"inline": {"OUT": "task-world in p-embedded-local"}},
	}}
	for _, tc := range cases {
		name := tc.pipeline
		if tc.timeouts != nil && tc.timeouts.Tasks != nil {
			name += "/tasks-timeout"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, out, tracePath := testExecutor(t)
			e.Timeouts = tc.timeouts
			p, err := LoadPipeline(context.Background(), filepath.Join("testdata/exec/pipelines", tc.pipeline+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			ws := map[string]string{}
			for _, w := range tc.workspaces {
				ws[w] = t.TempDir()
			}
			res, err := e.Run(context.Background(), p, tc.params, ws, t.TempDir())
			t.Log("\n" + out.String())
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status || res.FailedTask != tc.failedTask || res.Succeeded != (tc.failedTask == "") {
				t.Errorf("run = %s (failed task %q, succeeded %v), want %s (failed task %q)", res.Status, res.FailedTask, res.Succeeded, tc.status, tc.failedTask)
			}
			got := statusOf(res)
			for n, want := range tc.tasks {
				if got[n] != want {
					t.Errorf("task %s = %s, want %s", n, got[n], want)
				}
			}
			if len(got) != len(tc.tasks) {
				t.Errorf("tasks = %v, want %v", got, tc.tasks)
			}
			for n, want := range tc.results {
				for k, v := range want {
					if g := res.Task(n).Results[k]; g != v {
						t.Errorf("task %s result %s = %q, want %q", n, k, g, v)
					}
				}
			}
			for k, v := range tc.pipeResult {
				if res.Results[k] != v {
					t.Errorf("pipeline result %s = %q, want %q", k, res.Results[k], v)
				}
			}
			if tc.check != nil {
				var ev map[string]int64
				if _, err := os.Stat(tracePath); err == nil {
					ev = traceEvents(t, tracePath)
				}
				tc.check(t, res, ev, out.String(), ws)
			}
		})
	}
}

// TestRunRejects checks that bad input stops the run before any step
// starts, with Tekton's messages where Tekton has one.
func TestRunRejects(t *testing.T) {
	cases := []struct {
		name, pipeline string
		params         map[string]string
		workspaces     []string
		noHelper       bool
		wantErr        string
	}{
		{"missing required param", "params", nil, []string{"work"}, false, "pipelineRun missing parameters: [who]"},
		{"unbound workspace", "params", map[string]string{"who": "x"}, nil, false, `pipeline requires workspace with name "work" be provided by pipelinerun`},
		{"undeclared workspace", "dag", nil, []string{"nope"}, false, `workspace "nope" is not declared by Pipeline p-dag`},
		{"no local binary", "dag", nil, nil, true, `task d: Task t-helper steps[0] (run): command "helper" has no local binary`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _, trace := testExecutor(t)
			if tc.noHelper {
				e.Commands = nil
			}
			p, err := LoadPipeline(context.Background(), filepath.Join("testdata/exec/pipelines", tc.pipeline+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			ws := map[string]string{}
			for _, w := range tc.workspaces {
				ws[w] = t.TempDir()
			}
			_, err = e.Run(context.Background(), p, tc.params, ws, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Run error = %v, want %q", err, tc.wantErr)
			}
			if _, err := os.Stat(trace); err == nil {
				t.Error("a step ran although the input was rejected")
			}
		})
	}
}

// TestRunCancel: cancelling the caller's context stops the running step
// and reports Cancelled.
func TestRunCancel(t *testing.T) {
	e, _, _ := testExecutor(t)
	p, err := LoadPipeline(context.Background(), "testdata/exec/pipelines/pipeline-timeout.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := e.Run(ctx, p, nil, nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "Cancelled" || time.Since(start) > 10*time.Second {
		t.Errorf("run = %s after %s, want Cancelled quickly", res.Status, time.Since(start))
	}
	names := []string{}
	for n, s := range statusOf(res) {
		names = append(names, n+"="+s)
	}
	sort.Strings(names)
	if strings.Join(names, " ") != "after=Skipped/PipelineRun was cancelled f=Skipped/PipelineRun was cancelled slow=Failed/TaskRunCancelled" {
		t.Errorf("tasks = %v", names)
	}
}

// TestRunRelativePaths: a relative step binary, run folder and workspace
// (as `make run` passes bin/kiln-steps and _out/) still work, although
// steps run in their task folder.
func TestRunRelativePaths(t *testing.T) {
	e, _, _ := testExecutor(t)
	p, err := LoadPipeline(context.Background(), "testdata/exec/pipelines/params.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin, err := filepath.Rel(dir, os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if err := os.Mkdir("work", 0o755); err != nil {
		t.Fatal(err)
	}
	e.Commands = map[string]string{"helper": bin}
	res, err := e.Run(context.Background(), p, map[string]string{"who": "x"}, map[string]string{"work": "work"}, "out")
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "work", "sub", "said")); err != nil || string(b) != "hi x" {
		t.Errorf("work/sub/said = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "default-pipeline", "run.log")); err != nil {
		t.Error(err)
	}
}
