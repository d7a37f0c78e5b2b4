package pipeline

import (
	"context"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepositoryTasksAndPipelines validates every YAML under tasks/ and
// pipelines/ with Tekton's own defaulting and validation, and every Task
// against kiln's step and result contract.
func TestRepositoryTasksAndPipelines(t *testing.T) {
	ctx := context.Background()
	tasks := yamlFiles(t, "../../tasks")
	loaded := map[string]*tektonv1.Task{}
	for _, p := range tasks {
		if task, err := LoadTask(ctx, p); err == nil {
			loaded[task.Name] = task
		}
	}
	for _, p := range tasks {
		t.Run(filepath.Base(p), func(t *testing.T) {
			task, err := LoadTask(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if want := "kiln-" + strings.TrimSuffix(filepath.Base(p), ".yaml"); task.Name != want {
				t.Errorf("Task name %q, want %q (file name)", task.Name, want)
			}
			if err := CheckKilnTask(task); err != nil {
				t.Error(err)
			}
		})
	}
	pipelines := yamlFiles(t, "../../pipelines")
	for _, p := range pipelines {
		t.Run(filepath.Base(p), func(t *testing.T) {
			pl, err := LoadPipeline(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckPipelineTasks(pl, loaded); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestLoadTaskRejects(t *testing.T) {
	cases := []struct {
		name, yaml, wantErr string
	}{
		{"unknown field", `apiVersion: tekton.dev/v1
kind: Task
metadata: {name: kiln-x}
spec:
  steps:
  - name: a
    image: img
    comand: [kiln-steps]
`, `unknown field "comand"`},
		{"wrong kind", `apiVersion: tekton.dev/v1
kind: Pipeline
metadata: {name: kiln-x}
spec: {}
`, "want tekton.dev/v1/Task"},
		{"no steps", `apiVersion: tekton.dev/v1
kind: Task
metadata: {name: kiln-x}
spec: {}
`, "missing field(s): spec.steps"},
		{"undeclared param", `apiVersion: tekton.dev/v1
kind: Task
metadata: {name: kiln-x}
spec:
  steps:
  - name: a
    image: img
    command: [kiln-steps]
    args: [render, --pool=$(params.pool)]
`, `non-existent variable`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "task.yaml")
			if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadTask(context.Background(), p)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}

// yamlFiles lists the Tekton YAML of dir: every .yaml but the
// kustomization.yaml that config/ installs them through.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(all) == 0 {
		t.Fatalf("no YAML in %s: %v", dir, err)
	}
	var out []string
	for _, p := range all {
		if filepath.Base(p) != "kustomization.yaml" {
			out = append(out, p)
		}
	}
	return out
}
