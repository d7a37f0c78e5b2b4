package pipeline

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
)

// CheckPipelineTasks checks a Pipeline against the Tasks it references,
// what the Tekton controller would only find when a run reaches them:
// every referenced Task exists, required params are given and no unknown
// ones are, required workspaces are bound and no unknown ones are, and
// every $(tasks.X.results.Y) — in params, matrix, when expressions and
// Pipeline results, found by Tekton's own parser — names a result X's
// Task declares (and, for $(tasks.X.results.Y.key), a key of it).
func CheckPipelineTasks(p *tektonv1.Pipeline, tasks map[string]*tektonv1.Task) error {
	byName := map[string]*tektonv1.Task{}
	var problems []string
	all := append(append([]tektonv1.PipelineTask{}, p.Spec.Tasks...), p.Spec.Finally...)
	for _, pt := range all {
		if pt.TaskRef == nil {
			continue
		}
		t, ok := tasks[pt.TaskRef.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("task %s: Task %s not found", pt.Name, pt.TaskRef.Name))
			continue
		}
		byName[pt.Name] = t
		problems = append(problems, checkParams(pt, t)...)
		problems = append(problems, checkWorkspaces(pt, t)...)
	}
	for i := range all {
		problems = append(problems, checkResultRefs(all[i].Name, tektonv1.PipelineTaskResultRefs(&all[i]), byName)...)
	}
	for _, r := range p.Spec.Results {
		exprs, _ := r.GetVarSubstitutionExpressions()
		problems = append(problems, checkResultRefs("results."+r.Name, tektonv1.NewResultRefs(exprs), byName)...)
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		problems = slices.Compact(problems) // one ref used twice is one problem
		return fmt.Errorf("Pipeline %s: %s", p.Name, strings.Join(problems, "; "))
	}
	return nil
}

func checkParams(pt tektonv1.PipelineTask, t *tektonv1.Task) []string {
	var out []string
	given := map[string]bool{}
	for _, p := range pt.Params {
		given[p.Name] = true
	}
	declared := map[string]bool{}
	for _, p := range t.Spec.Params {
		declared[p.Name] = true
		if p.Default == nil && !given[p.Name] {
			out = append(out, fmt.Sprintf("task %s: required param %s of Task %s is not given", pt.Name, p.Name, t.Name))
		}
	}
	for n := range given {
		if !declared[n] {
			out = append(out, fmt.Sprintf("task %s: Task %s has no param %s", pt.Name, t.Name, n))
		}
	}
	return out
}

func checkWorkspaces(pt tektonv1.PipelineTask, t *tektonv1.Task) []string {
	var out []string
	bound := map[string]bool{}
	for _, w := range pt.Workspaces {
		bound[w.Name] = true
	}
	declared := map[string]bool{}
	for _, w := range t.Spec.Workspaces {
		declared[w.Name] = true
		if !w.Optional && !bound[w.Name] {
			out = append(out, fmt.Sprintf("task %s: workspace %s of Task %s is not bound", pt.Name, w.Name, t.Name))
		}
	}
	for n := range bound {
		if !declared[n] {
			out = append(out, fmt.Sprintf("task %s: Task %s has no workspace %s", pt.Name, t.Name, n))
		}
	}
	return out
}

func checkResultRefs(where string, refs []*tektonv1.ResultRef, byName map[string]*tektonv1.Task) []string {
	var out []string
	for _, ref := range refs {
		t, ok := byName[ref.PipelineTask]
		if !ok {
			out = append(out, fmt.Sprintf("%s: $(tasks.%s…) names no task", where, ref.PipelineTask))
			continue
		}
		i := slices.IndexFunc(t.Spec.Results, func(r tektonv1.TaskResult) bool { return r.Name == ref.Result })
		if i < 0 {
			out = append(out, fmt.Sprintf("%s: Task %s has no result %s", where, t.Name, ref.Result))
			continue
		}
		if msg := checkResultKey(t.Spec.Results[i], ref.Property); msg != "" {
			out = append(out, fmt.Sprintf("%s: result %s of Task %s %s", where, ref.Result, t.Name, msg))
		}
	}
	return out
}

// checkResultKey: $(tasks.X.results.Y.key) needs Y to be an object result
// that declares key.
func checkResultKey(r tektonv1.TaskResult, key string) string {
	switch {
	case key == "":
		return ""
	case r.Type != tektonv1.ResultsTypeObject:
		return fmt.Sprintf("is not an object, so it has no key %s", key)
	case r.Properties != nil:
		if _, ok := r.Properties[key]; !ok {
			return "has no key " + key
		}
	}
	return ""
}
