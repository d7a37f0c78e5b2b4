package pipeline

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
)

var resultRef = regexp.MustCompile(`\$\(tasks\.([a-z0-9-]+)\.results\.([A-Za-z0-9_.-]+)\)`)

// CheckPipelineTasks checks a Pipeline against the Tasks it references,
// what the Tekton controller would only find when a run reaches them:
// every referenced Task exists, required params are given and no unknown
// ones are, required workspaces are bound and no unknown ones are, and
// every $(tasks.X.results.Y) names a result X's Task declares.
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
	for _, pt := range all {
		for _, param := range pt.Params {
			for _, v := range append([]string{param.Value.StringVal}, param.Value.ArrayVal...) {
				problems = append(problems, checkResultRefs(pt.Name, v, byName)...)
			}
		}
	}
	for _, r := range p.Spec.Results {
		problems = append(problems, checkResultRefs("results."+r.Name, r.Value.StringVal, byName)...)
	}
	if len(problems) > 0 {
		sort.Strings(problems)
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

func checkResultRefs(where, v string, byName map[string]*tektonv1.Task) []string {
	var out []string
	for _, m := range resultRef.FindAllStringSubmatch(v, -1) {
		t, ok := byName[m[1]]
		if !ok {
			out = append(out, fmt.Sprintf("%s: $(tasks.%s…) names no task", where, m[1]))
			continue
		}
		found := false
		for _, r := range t.Spec.Results {
			found = found || r.Name == m[2]
		}
		if !found {
			out = append(out, fmt.Sprintf("%s: Task %s has no result %s", where, t.Name, m[2]))
		}
	}
	return out
}
