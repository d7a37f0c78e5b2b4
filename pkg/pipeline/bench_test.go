package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkTaskOverhead measures what the executor adds to one task: a
// one-task Pipeline through Executor.Run (validation, DAG, substitution,
// run folder, log file, results read-back, progress) against starting the
// same step process directly with os/exec and the same arguments. Both are
// measured in the same run; the ratio is executor/direct.
func BenchmarkTaskOverhead(b *testing.B) {
	ctx := context.Background()
	tasks, err := LoadTasks(ctx, "testdata/exec/tasks")
	if err != nil {
		b.Fatal(err)
	}
	p, err := LoadPipeline(ctx, "testdata/exec/pipelines/one.yaml")
	if err != nil {
		b.Fatal(err)
	}
	trace := filepath.Join(b.TempDir(), "trace")
	env := []string{"KILN_EXEC_HELPER=1", "KILN_TRACE=" + trace}
	e := &Executor{Tasks: tasks, Commands: map[string]string{"helper": os.Args[0]}, Env: env}
	root := b.TempDir()
	var direct, executor time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		results := filepath.Join(root, "direct", "results")
		if err := os.MkdirAll(results, 0o755); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		cmd := exec.Command(os.Args[0], "--results-dir="+results, "--out-path="+filepath.Join(results, "OUT"), "--work=", "--bound=false",
			"--greeting=hello", "--retry=0", "--taskrun=p-one-local-a", "--name=a", "--result=OUT=x")
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		if v, err := os.ReadFile(filepath.Join(results, "OUT")); err != nil || string(v) != "x" {
			b.Fatalf("direct result %q, %v", v, err)
		}
		direct += time.Since(start)

		start = time.Now()
		res, err := e.Run(ctx, p, nil, nil, filepath.Join(root, "run"))
		if err != nil || !res.Succeeded || res.Task("a").Results["OUT"] != "x" {
			b.Fatalf("run: %v %+v", err, res)
		}
		executor += time.Since(start)
	}
	b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N), "direct-ns/task")
	b.ReportMetric(float64(executor.Nanoseconds())/float64(b.N), "executor-ns/task")
	b.ReportMetric(float64(executor)/float64(direct), "executor/direct")
}
