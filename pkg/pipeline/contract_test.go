package pipeline

import (
	"strings"
	"testing"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCheckPipelineTasks(t *testing.T) {
	task := &tektonv1.Task{ObjectMeta: metav1.ObjectMeta{Name: "kiln-a"}, Spec: tektonv1.TaskSpec{
		Params:     tektonv1.ParamSpecs{{Name: "pool"}, {Name: "opt", Default: tektonv1.NewStructuredValues("x")}},
		Workspaces: []tektonv1.WorkspaceDeclaration{{Name: "work"}, {Name: "auth", Optional: true}},
		Results: []tektonv1.TaskResult{{Name: "IMAGE_URL"}, {Name: "OBJ", Type: tektonv1.ResultsTypeObject,
			Properties: map[string]tektonv1.PropertySpec{"digest": {Type: tektonv1.ParamTypeString}}}},
	}}
	tasks := map[string]*tektonv1.Task{"kiln-a": task}
	pt := func(name string, params map[string]string, ws ...string) tektonv1.PipelineTask {
		p := tektonv1.PipelineTask{Name: name, TaskRef: &tektonv1.TaskRef{Name: "kiln-a"}}
		for k, v := range params {
			p.Params = append(p.Params, tektonv1.Param{Name: k, Value: *tektonv1.NewStructuredValues(v)})
		}
		for _, w := range ws {
			p.Workspaces = append(p.Workspaces, tektonv1.WorkspacePipelineTaskBinding{Name: w, Workspace: w})
		}
		return p
	}
	when := func(p tektonv1.PipelineTask, input string) tektonv1.PipelineTask {
		p.When = tektonv1.WhenExpressions{{Input: input, Operator: "in", Values: []string{"true"}}}
		return p
	}
	one := pt("one", map[string]string{"pool": "p"}, "work")
	cases := []struct {
		name  string
		tasks []tektonv1.PipelineTask
		want  string
	}{
		{"good", []tektonv1.PipelineTask{pt("one", map[string]string{"pool": "p"}, "work"), pt("two", map[string]string{"pool": "$(tasks.one.results.IMAGE_URL)"}, "work", "auth")}, ""},
		{"missing required param", []tektonv1.PipelineTask{pt("one", nil, "work")}, "task one: required param pool of Task kiln-a is not given"},
		{"unknown param", []tektonv1.PipelineTask{pt("one", map[string]string{"pool": "p", "nope": "x"}, "work")}, "task one: Task kiln-a has no param nope"},
		{"unbound workspace", []tektonv1.PipelineTask{pt("one", map[string]string{"pool": "p"})}, "task one: workspace work of Task kiln-a is not bound"},
		{"unknown workspace", []tektonv1.PipelineTask{pt("one", map[string]string{"pool": "p"}, "work", "extra")}, "task one: Task kiln-a has no workspace extra"},
		{"unknown result", []tektonv1.PipelineTask{pt("one", map[string]string{"pool": "p"}, "work"), pt("two", map[string]string{"pool": "$(tasks.one.results.IMAGE_DIGEST)"}, "work")}, "two: Task kiln-a has no result IMAGE_DIGEST"},
		{"when input naming an unknown result", []tektonv1.PipelineTask{one, when(pt("two", map[string]string{"pool": "p"}, "work"), "$(tasks.one.results.CHANGED)")}, "two: Task kiln-a has no result CHANGED"},
		{"when input naming an unknown task", []tektonv1.PipelineTask{one, when(pt("two", map[string]string{"pool": "p"}, "work"), "$(tasks.nope.results.IMAGE_URL)")}, "two: $(tasks.nope…) names no task"},
		{"when input naming a declared result", []tektonv1.PipelineTask{one, when(pt("two", map[string]string{"pool": "p"}, "work"), "$(tasks.one.results.IMAGE_URL)")}, ""},
		{"object result key", []tektonv1.PipelineTask{one, pt("two", map[string]string{"pool": "$(tasks.one.results.OBJ.digest)"}, "work")}, ""},
		{"object result unknown key", []tektonv1.PipelineTask{one, pt("two", map[string]string{"pool": "$(tasks.one.results.OBJ.size)"}, "work")}, "two: result OBJ of Task kiln-a has no key size"},
		{"unknown Task", []tektonv1.PipelineTask{{Name: "x", TaskRef: &tektonv1.TaskRef{Name: "kiln-missing"}}}, "task x: Task kiln-missing not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &tektonv1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "kiln-p"}, Spec: tektonv1.PipelineSpec{Tasks: tc.tasks}}
			err := CheckPipelineTasks(p, tasks)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
