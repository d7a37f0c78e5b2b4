package pipeline

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/container"
	"github.com/tektoncd/pipeline/pkg/substitution"
)

// This file builds the replacement maps ("params.x" → value) that Tekton's
// exported substitution code (v1.Params.ReplaceVariables,
// v1.WhenExpressions.ReplaceVariables, container.ApplyStepReplacements,
// substitution.ApplyReplacements) applies. Tekton builds the same maps in
// pkg/reconciler/{pipelinerun,taskrun}/resources, but those packages also
// import remote resolution, trusted resources and SPIRE: 444 packages more
// than kiln's binaries already link (AWS, Azure and GCP SDKs, spiffe) and
// new go.sum modules. The map builders there are unexported, so the few
// lines below mirror them key for key (patterns, array indexing, context
// names); the substitution itself stays Tekton's.

// paramPatterns are the three spellings of a param reference Tekton accepts.
var paramPatterns = []string{"params.%s", "params[%q]", "params['%s']"}

// replacements is one set of string and array substitutions.
type replacements struct {
	str map[string]string
	arr map[string][]string
	obj map[string]map[string]string
}

func newReplacements() replacements {
	return replacements{str: map[string]string{}, arr: map[string][]string{}, obj: map[string]map[string]string{}}
}

// addParam records one param value under every spelling Tekton accepts.
func (r replacements) addParam(name string, v tektonv1.ParamValue) {
	for _, pattern := range paramPatterns {
		key := fmt.Sprintf(pattern, name)
		switch v.Type {
		case tektonv1.ParamTypeArray:
			for i, s := range v.ArrayVal {
				r.str[fmt.Sprintf("%s[%d]", key, i)] = s
			}
			r.arr[key] = v.ArrayVal
		case tektonv1.ParamTypeObject:
			r.obj[key] = v.ObjectVal
			for k, s := range v.ObjectVal {
				r.str[fmt.Sprintf("params.%s.%s", name, k)] = s
			}
		default:
			r.str[key] = v.StringVal
		}
	}
}

// paramValues merges declared defaults with given values: the values a
// Run's params take after Tekton's defaulting. A default that refers to
// another param ("$(params.a)-x") is resolved against the others, as
// Tekton's second pass does.
func paramValues(specs tektonv1.ParamSpecs, given tektonv1.Params) replacements {
	r := newReplacements()
	set := map[string]bool{}
	for _, p := range given {
		set[p.Name] = true
	}
	for _, s := range specs {
		if s.Default != nil && !set[s.Name] && !strings.Contains(s.Default.StringVal, "$(params.") {
			r.addParam(s.Name, *s.Default)
		}
	}
	for _, p := range given {
		r.addParam(p.Name, p.Value)
	}
	for _, s := range specs {
		if s.Default != nil && !set[s.Name] && strings.Contains(s.Default.StringVal, "$(params.") {
			v := *s.Default
			v.StringVal = substitution.ApplyReplacements(v.StringVal, r.str)
			r.addParam(s.Name, v)
		}
	}
	return r
}

// missingParams is Tekton's ValidateRequiredParametersProvided: declared
// params without a default that the run does not give.
func missingParams(specs tektonv1.ParamSpecs, given tektonv1.Params) error {
	have := map[string]bool{}
	for _, p := range given {
		have[p.Name] = true
	}
	var missing []string
	for _, s := range specs {
		if s.Default == nil && !have[s.Name] {
			missing = append(missing, s.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("pipelineRun missing parameters: %v", missing)
	}
	return nil
}

// pipelineContext is pipelinerun/resources.GetContextReplacements plus
// ApplyPipelineTaskContexts' retry count.
func pipelineContext(r replacements, pipelineName, runName, namespace, uid string, pt *tektonv1.PipelineTask) {
	r.str["context.pipeline.name"] = pipelineName
	r.str["context.pipelineRun.name"] = runName
	r.str["context.pipelineRun.namespace"] = namespace
	r.str["context.pipelineRun.uid"] = uid
	r.str["context.pipelineTask.retries"] = strconv.Itoa(pt.Retries)
}

// resultRefs lists the "tasks.X.results.Y" references of a PipelineTask
// (params, when, displayName) with Tekton's own parser.
func resultRefs(pt *tektonv1.PipelineTask) []*tektonv1.ResultRef {
	return tektonv1.PipelineTaskResultRefs(pt)
}

// resultKey is the replacement key of a task result.
func resultKey(task, result string) string { return "tasks." + task + ".results." + result }

// applyToPipelineTask substitutes into the fields of a PipelineTask the
// Tekton controller substitutes before it creates the TaskRun.
func applyToPipelineTask(pt tektonv1.PipelineTask, r replacements) tektonv1.PipelineTask {
	pt = *pt.DeepCopy()
	pt.Params = pt.Params.ReplaceVariables(r.str, r.arr, r.obj)
	pt.When = pt.When.ReplaceVariables(r.str, r.arr)
	pt.DisplayName = substitution.ApplyReplacements(pt.DisplayName, r.str)
	for i := range pt.Workspaces {
		pt.Workspaces[i].SubPath = substitution.ApplyReplacements(pt.Workspaces[i].SubPath, r.str)
	}
	if pt.TaskSpec != nil {
		// An embedded taskSpec also gets the pipeline's variables
		// (pipelinerun/resources propagateParams); a param the
		// PipelineTask sets is left for the TaskRun, which scopes it.
		scoped := newReplacements()
		for k, v := range r.str {
			scoped.str[k] = v
		}
		for k, v := range r.arr {
			scoped.arr[k] = v
		}
		for _, p := range pt.Params {
			for _, pattern := range paramPatterns {
				delete(scoped.str, fmt.Sprintf(pattern, p.Name))
				delete(scoped.arr, fmt.Sprintf(pattern, p.Name))
			}
		}
		for i := range pt.TaskSpec.Steps {
			container.ApplyStepReplacements(&pt.TaskSpec.Steps[i], scoped.str, scoped.arr)
		}
	}
	return pt
}

// taskReplacements are the substitutions of one TaskRun: params, context
// (taskrun/resources.getContextReplacements), workspaces (ApplyWorkspaces;
// a folder stands in for the mount path) and results paths (ApplyResults,
// with /tekton/results, rewritten later like every /tekton/ path).
func taskReplacements(spec *tektonv1.TaskSpec, params tektonv1.Params, taskName, runName, namespace string, retry int, bound map[string]string) replacements {
	r := paramValues(spec.Params, params)
	r.str["context.taskRun.name"] = runName
	r.str["context.task.name"] = taskName
	r.str["context.taskRun.namespace"] = namespace
	r.str["context.taskRun.uid"] = ""
	r.str["context.task.retry-count"] = strconv.Itoa(retry)
	for _, w := range spec.Workspaces {
		prefix := "workspaces." + w.Name + "."
		dir, ok := bound[w.Name]
		r.str[prefix+"bound"] = strconv.FormatBool(ok)
		r.str[prefix+"path"] = dir
		r.str[prefix+"claim"] = ""
		if ok {
			r.str[prefix+"volume"] = w.Name
		}
	}
	for _, res := range spec.Results {
		for _, pattern := range []string{"results.%s.path", "results[%q].path", "results['%s'].path"} {
			r.str[fmt.Sprintf(pattern, res.Name)] = filepath.Join("/tekton/results", res.Name)
		}
	}
	r.str["credentials.path"] = "/tekton/creds"
	return r
}

// summarize renders results as one short line, sorted by name.
func summarize(results map[string]string) string {
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		v := strings.ReplaceAll(results[n], "\n", " ")
		if len(v) > 48 {
			v = v[:45] + "..."
		}
		parts = append(parts, n+"="+v)
	}
	return strings.Join(parts, " ")
}
