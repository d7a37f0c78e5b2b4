package pipeline

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
)

// Step-level ("isolated") workspaces: a Task workspace that any step or
// sidecar lists under its own workspaces is mounted into those containers
// only (Tekton's workspace.Apply), so a step that runs user code can sit in
// the same Task as one that holds a key without ever seeing it.
//
// Tekton substitutes $(workspaces.<name>.path) in every step alike; in a
// pod the path then names nothing in the other steps. On one machine a
// folder would be reachable from any step, so the executor gives a step
// that does not list an isolated workspace an empty path and "false" for
// bound, and CheckIsolatedWorkspaces refuses a Task whose step names one
// it does not list.

// isolatedWorkspaces returns the Task's workspaces that some step or
// sidecar lists.
func isolatedWorkspaces(spec *tektonv1.TaskSpec) []string {
	var out []string
	for _, s := range spec.Steps {
		for _, w := range s.Workspaces {
			out = append(out, w.Name)
		}
	}
	for _, s := range spec.Sidecars {
		for _, w := range s.Workspaces {
			out = append(out, w.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// stepReplacements hides from step s the isolated workspaces it does not
// list.
func stepReplacements(r replacements, isolated []string, s tektonv1.Step) replacements {
	hidden := false
	out := replacements{str: r.str, arr: r.arr, obj: r.obj}
	for _, w := range isolated {
		if slices.ContainsFunc(s.Workspaces, func(u tektonv1.WorkspaceUsage) bool { return u.Name == w }) {
			continue
		}
		if !hidden {
			out.str = make(map[string]string, len(r.str))
			for k, v := range r.str {
				out.str[k] = v
			}
			hidden = true
		}
		out.str["workspaces."+w+".path"] = ""
		out.str["workspaces."+w+".bound"] = "false"
		delete(out.str, "workspaces."+w+".volume")
	}
	return out
}

var workspaceRef = regexp.MustCompile(`\$\(workspaces\.([a-z0-9-]+)\.(path|bound|volume|claim)\)`)

// CheckIsolatedWorkspaces refuses a Task with a step that names (in its
// command, args, env, script or working dir) an isolated workspace it
// does not list: in a pod that step would get a path to nothing.
func CheckIsolatedWorkspaces(t *tektonv1.Task) error {
	isolated := isolatedWorkspaces(&t.Spec)
	var problems []string
	for _, s := range t.Spec.Steps {
		problems = append(problems, checkStepMounts(t, s)...)
		fields := append(append([]string{s.Script, s.WorkingDir}, s.Command...), s.Args...)
		for _, e := range s.Env {
			fields = append(fields, e.Value)
		}
		for _, f := range fields {
			for _, m := range workspaceRef.FindAllStringSubmatch(f, -1) {
				w := m[1]
				if slices.Contains(isolated, w) && !slices.ContainsFunc(s.Workspaces, func(u tektonv1.WorkspaceUsage) bool { return u.Name == w }) {
					problems = append(problems, fmt.Sprintf("step %s names workspace %s, which is isolated to other steps", s.Name, w))
				}
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("Task %s: %s", t.Name, strings.Join(slices.Compact(problems), "; "))
	}
	return nil
}

// checkStepMounts: the apiserver's Task schema requires a step
// workspace's mountPath (Tekton's Go validation does not), and
// $(workspaces.<name>.path) names the Task workspace's path, so the two
// must be the same.
func checkStepMounts(t *tektonv1.Task, s tektonv1.Step) []string {
	var out []string
	for _, u := range s.Workspaces {
		i := slices.IndexFunc(t.Spec.Workspaces, func(w tektonv1.WorkspaceDeclaration) bool { return w.Name == u.Name })
		switch {
		case u.MountPath == "":
			out = append(out, fmt.Sprintf("step %s workspace %s: mountPath is required", s.Name, u.Name))
		case i >= 0 && u.MountPath != t.Spec.Workspaces[i].GetMountPath():
			out = append(out, fmt.Sprintf("step %s workspace %s: mountPath %s is not the Task workspace's %s, which $(workspaces.%s.path) names",
				s.Name, u.Name, u.MountPath, t.Spec.Workspaces[i].GetMountPath(), u.Name))
		}
	}
	return out
}

// UserCodeSubcommands are the kiln-steps subcommands that run a user's
// Dockerfile, Containerfile or build arguments (through buildah).
var UserCodeSubcommands = []string{"kmod-build", "image-build", "reproduce"}

// KeyWorkspaces are the Task workspaces that carry a private signing key:
// kiln's cosign key and the ModuleDay0's kernel-module signing key.
var KeyWorkspaces = []string{"cosign-key", "signing-key"}

// CheckKeysIsolated is the threat model's rule for one Task: a step that
// runs user code never mounts a key. In a Task with such a step, every key
// workspace must be isolated to other steps (listed under their
// workspaces, never under the user-code step's).
func CheckKeysIsolated(t *tektonv1.Task) error {
	var userSteps []tektonv1.Step
	for _, s := range t.Spec.Steps {
		if len(s.Args) > 0 && slices.Contains(UserCodeSubcommands, s.Args[0]) {
			userSteps = append(userSteps, s)
		}
	}
	if len(userSteps) == 0 {
		return nil
	}
	isolated := isolatedWorkspaces(&t.Spec)
	var problems []string
	for _, w := range t.Spec.Workspaces {
		if !slices.Contains(KeyWorkspaces, w.Name) {
			continue
		}
		if !slices.Contains(isolated, w.Name) {
			problems = append(problems, fmt.Sprintf("key workspace %s is mounted in every step, beside user code", w.Name))
		}
		for _, s := range userSteps {
			if slices.ContainsFunc(s.Workspaces, func(u tektonv1.WorkspaceUsage) bool { return u.Name == w.Name }) {
				problems = append(problems, fmt.Sprintf("step %s runs user code and mounts key workspace %s", s.Name, w.Name))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("Task %s: %s", t.Name, strings.Join(problems, "; "))
	}
	return nil
}
