package catlint

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/workspace"

	"github.com/kiln-dev/kiln/pkg/pipeline"
)

// fakeE2E stands in for what the e2e exports to the hooks.
var fakeE2E = map[string]string{
	"KILN_E2E_STEPS_IMAGE": "kiln.local/kiln-steps:e2e",
	"KILN_E2E_REGISTRY":    "10.0.0.2:5000",
	"KILN_E2E_IMAGE":       "10.0.0.2:5000/kiln/node-image-worker@sha256:" + strings.Repeat("1", 64),
	"KILN_E2E_DTK_IMAGE":   "10.0.0.2:5000/openshift/dtk@sha256:" + strings.Repeat("2", 64),
}

func fakeEnv() []string {
	var env []string
	for _, k := range E2EValues {
		env = append(env, k+"="+fakeE2E[k])
	}
	return env
}

// TestCatalogTestsFolders: every catalog resource has the tests/ folder
// tektoncd/catalog's CI runs; after its hook, every file decodes with
// Tekton's scheme and passes Tekton's validation; a run references the
// resource by name; every run gives each kiln Task its ServiceAccount,
// every param and workspace it needs and none it lacks, and the e2e's
// kiln-steps image; the hooks pass shellcheck.
func TestCatalogTestsFolders(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(repoRoot, "catalog")
	rs := loadCatalog(t, dir)
	tasks := map[string]*tektonv1.Task{}
	pipelines := map[string]*tektonv1.Pipeline{}
	for _, r := range rs {
		if r.Task != nil {
			tasks[r.Meta().Name] = r.Task
		} else {
			pipelines[r.Meta().Name] = r.Pipeline
		}
	}
	for _, r := range rs {
		t.Run(r.Kind()+"/"+r.Meta().Name, func(t *testing.T) {
			testsDir := filepath.Join(dir, filepath.FromSlash(path.Dir(r.Rel)), "tests")
			entries, err := os.ReadDir(testsDir)
			if err != nil {
				t.Fatalf("no tests/ folder: %v", err)
			}
			for _, e := range entries {
				switch n := e.Name(); {
				case n == TaskHook || n == RunHook:
					if err := LintShellFile(filepath.Join(testsDir, n)); err != nil {
						t.Errorf("%s: %v", n, err)
					}
				case strings.HasSuffix(n, ".yaml"):
				default:
					t.Errorf("tests/%s: the catalog's CI reads only *.yaml and its hooks", n)
				}
			}
			files, err := PrepareTests(ctx, testsDir, fakeEnv())
			if err != nil {
				t.Fatal(err)
			}
			var runs int
			for _, f := range files {
				for _, d := range f.Docs {
					if References(d.Object, r) {
						runs++
					}
					if err := checkRun(d.Object, tasks, pipelines); err != nil {
						t.Errorf("tests/%s: %v", f.Name, err)
					}
				}
			}
			if runs == 0 {
				t.Errorf("no run in tests/ references %s %s", r.Kind(), r.Meta().Name)
			}
		})
	}
}

// checkRun checks a run against the catalog's Tasks and Pipelines as the
// Tekton controller would when it reaches them, and kiln's conventions: a
// Task kiln-X runs as ServiceAccount kiln-X (config/rbac), with the e2e's
// kiln-steps image.
func checkRun(obj any, tasks map[string]*tektonv1.Task, pipelines map[string]*tektonv1.Pipeline) error {
	steps := fakeE2E["KILN_E2E_STEPS_IMAGE"]
	switch o := obj.(type) {
	case *tektonv1.TaskRun:
		task, ok := tasks[o.Spec.TaskRef.Name]
		if !ok {
			return fmt.Errorf("TaskRun: Task %s is not in the catalog", o.Spec.TaskRef.Name)
		}
		if o.Spec.ServiceAccountName != task.Name {
			return fmt.Errorf("TaskRun of %s: serviceAccountName %q, want %s", task.Name, o.Spec.ServiceAccountName, task.Name)
		}
		if v := paramValue(o.Spec.Params, StepsImageParam); v != steps {
			return fmt.Errorf("TaskRun of %s: %s is %q, want the e2e's image", task.Name, StepsImageParam, v)
		}
		// A Pipeline of one task is checked as Tekton checks a Pipeline.
		p := &tektonv1.Pipeline{Spec: tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{Name: "run", TaskRef: o.Spec.TaskRef, Params: o.Spec.Params}}}}
		for _, w := range o.Spec.Workspaces {
			p.Spec.Tasks[0].Workspaces = append(p.Spec.Tasks[0].Workspaces, tektonv1.WorkspacePipelineTaskBinding{Name: w.Name, Workspace: w.Name})
		}
		if err := pipeline.CheckPipelineTasks(p, tasks); err != nil {
			return err
		}
		return workspace.ValidateBindings(context.Background(), task.Spec.Workspaces, o.Spec.Workspaces)
	case *tektonv1.PipelineRun:
		var spec *tektonv1.PipelineSpec
		if o.Spec.PipelineRef != nil {
			p, ok := pipelines[o.Spec.PipelineRef.Name]
			if !ok {
				return fmt.Errorf("PipelineRun: Pipeline %s is not in the catalog", o.Spec.PipelineRef.Name)
			}
			spec = &p.Spec
		} else {
			spec = o.Spec.PipelineSpec
			if err := pipeline.CheckPipelineTasks(&tektonv1.Pipeline{Spec: *spec}, tasks); err != nil {
				return err
			}
		}
		if v := paramValue(o.Spec.Params, StepsImageParam); v != steps {
			return fmt.Errorf("PipelineRun: %s is %q, want the e2e's image", StepsImageParam, v)
		}
		for _, ps := range spec.Params {
			if ps.Default == nil && paramValue(o.Spec.Params, ps.Name) == "" {
				return fmt.Errorf("PipelineRun: required param %s is not given", ps.Name)
			}
		}
		var decl []tektonv1.WorkspaceDeclaration
		for _, w := range spec.Workspaces {
			decl = append(decl, tektonv1.WorkspaceDeclaration{Name: w.Name, Optional: w.Optional})
		}
		if err := workspace.ValidateBindings(context.Background(), decl, o.Spec.Workspaces); err != nil {
			return fmt.Errorf("PipelineRun: %w", err)
		}
		sas := map[string]string{}
		for _, s := range o.Spec.TaskRunSpecs {
			sas[s.PipelineTaskName] = s.ServiceAccountName
		}
		for _, pt := range append(append([]tektonv1.PipelineTask{}, spec.Tasks...), spec.Finally...) {
			if pt.TaskRef != nil && sas[pt.Name] != pt.TaskRef.Name {
				return fmt.Errorf("PipelineRun: task %s runs as %q, want ServiceAccount %s", pt.Name, sas[pt.Name], pt.TaskRef.Name)
			}
		}
	}
	return nil
}

func paramValue(ps tektonv1.Params, name string) string {
	for _, p := range ps {
		if p.Name == name {
			return p.Value.StringVal
		}
	}
	return ""
}

// TestPrepareTestsRejects: a placeholder the hook does not know and a run
// Tekton refuses both fail, naming the file.
func TestPrepareTestsRejects(t *testing.T) {
	for _, c := range []struct{ dir, want string }{
		{"tests-placeholder", "@KILN_E2E_NOPE@ is left after " + RunHook},
		{"tests-invalid", "Tekton's validation"},
		{"tests-unknown-field", "unknown field"},
	} {
		_, err := PrepareTests(context.Background(), filepath.Join("testdata", c.dir), fakeEnv())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.dir, err, c.want)
		}
	}
	if !slices.Contains(E2EValues, "KILN_E2E_IMAGE") {
		t.Errorf("E2EValues %v", E2EValues)
	}
}
