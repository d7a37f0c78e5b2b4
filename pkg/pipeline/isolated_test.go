package pipeline

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/container"
)

// TestKmodBuildMountsTheCosignKeyInTheAttestStepOnly reads the shipped
// kmod-build Task: its user-code step (buildah runs the ModuleDay0's
// Dockerfile) names no key and lists only the build Secrets; the attest
// step alone lists the cosign key.
func TestKmodBuildMountsTheCosignKeyInTheAttestStepOnly(t *testing.T) {
	task, err := LoadTask(context.Background(), "../../tasks/kmod-build.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, s := range task.Spec.Steps {
		got[s.Name] = nil
		for _, w := range s.Workspaces {
			got[s.Name] = append(got[s.Name], w.Name)
		}
		args := strings.Join(s.Args, " ")
		if slices.Contains(UserCodeSubcommands, s.Args[0]) && (strings.Contains(args, "cosign-key") || strings.Contains(args, "--key")) {
			t.Errorf("step %s runs user code and names a key: %s", s.Name, args)
		}
	}
	want := map[string][]string{"kmod-build": {"build-secrets"}, "attest": {"cosign-key"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("step workspaces (-want +got):\n%s", d)
	}
}

// TestCheckKeysIsolatedRefusesAKeyBesideUserCode: the threat model's rule
// as code. A Task whose buildah step can see the cosign key (the shape
// kmod-build had) is refused, as is one that lists the key under the
// buildah step itself; a key isolated to another step passes.
func TestCheckKeysIsolatedRefusesAKeyBesideUserCode(t *testing.T) {
	build := func(ws ...string) tektonv1.Step {
		s := tektonv1.Step{Name: "build", Args: []string{"kmod-build"}}
		for _, w := range ws {
			s.Workspaces = append(s.Workspaces, tektonv1.WorkspaceUsage{Name: w})
		}
		return s
	}
	attest := tektonv1.Step{Name: "attest", Args: []string{"kmod-attest"}, Workspaces: []tektonv1.WorkspaceUsage{{Name: "cosign-key"}}}
	task := func(steps ...tektonv1.Step) *tektonv1.Task {
		t := &tektonv1.Task{Spec: tektonv1.TaskSpec{Steps: steps,
			Workspaces: []tektonv1.WorkspaceDeclaration{{Name: "work"}, {Name: "cosign-key"}}}}
		t.Name = "kiln-x"
		return t
	}
	cases := []struct {
		name string
		task *tektonv1.Task
		want string
	}{
		{"key mounted in every step", task(build()), "Task kiln-x: key workspace cosign-key is mounted in every step, beside user code"},
		{"key listed under the buildah step", task(build("cosign-key"), attest), "Task kiln-x: step build runs user code and mounts key workspace cosign-key"},
		{"key isolated to the attest step", task(build(), attest), ""},
		{"no user code", task(attest), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckKeysIsolated(c.task)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("CheckKeysIsolated = %q, want %q", got, c.want)
			}
		})
	}
}

// TestCheckIsolatedWorkspacesRefusesAStepNamingAnotherStepsWorkspace: in
// a pod the path would name nothing; on one machine it would reach the key.
// A step workspace without the mountPath the apiserver's schema requires,
// or with another than the Task workspace's, is refused too.
func TestCheckIsolatedWorkspacesRefusesAStepNamingAnotherStepsWorkspace(t *testing.T) {
	tk := &tektonv1.Task{Spec: tektonv1.TaskSpec{
		Workspaces: []tektonv1.WorkspaceDeclaration{{Name: "cosign-key"}},
		Steps: []tektonv1.Step{
			{Name: "build", Args: []string{"kmod-build", "--key=$(workspaces.cosign-key.path)/cosign.key"}},
			{Name: "attest", Args: []string{"kmod-attest"}, Workspaces: []tektonv1.WorkspaceUsage{{Name: "cosign-key"}}},
		}}}
	tk.Name = "kiln-x"
	want := "Task kiln-x: step attest workspace cosign-key: mountPath is required; step build names workspace cosign-key, which is isolated to other steps"
	if err := CheckIsolatedWorkspaces(tk); err == nil || err.Error() != want {
		t.Fatalf("CheckIsolatedWorkspaces = %v, want %q", err, want)
	}
	tk.Spec.Steps[1].Workspaces[0].MountPath = "/keys"
	want = "Task kiln-x: step attest workspace cosign-key: mountPath /keys is not the Task workspace's /workspace/cosign-key, which $(workspaces.cosign-key.path) names; " +
		"step build names workspace cosign-key, which is isolated to other steps"
	if err := CheckIsolatedWorkspaces(tk); err == nil || err.Error() != want {
		t.Fatalf("CheckIsolatedWorkspaces = %v, want %q", err, want)
	}
}

// TestLocalStepsSeeOnlyTheirIsolatedWorkspaces: the local executor gives
// a step that does not list an isolated workspace no path to it, while
// the step that lists it and every shared workspace keep theirs.
func TestLocalStepsSeeOnlyTheirIsolatedWorkspaces(t *testing.T) {
	dir := t.TempDir()
	bound := map[string]string{"work": filepath.Join(dir, "work"), "cosign-key": filepath.Join(dir, "key")}
	spec := &tektonv1.TaskSpec{
		Workspaces: []tektonv1.WorkspaceDeclaration{{Name: "work"}, {Name: "cosign-key"}},
		Steps: []tektonv1.Step{
			{Name: "build", Args: []string{"kmod-build", "--work=$(workspaces.work.path)", "--k=$(workspaces.cosign-key.path)", "$(workspaces.cosign-key.bound)"}},
			{Name: "attest", Args: []string{"kmod-attest", "--work=$(workspaces.work.path)", "--k=$(workspaces.cosign-key.path)", "$(workspaces.cosign-key.bound)"},
				Workspaces: []tektonv1.WorkspaceUsage{{Name: "cosign-key"}}},
		},
	}
	r := taskReplacements(spec, nil, "kiln-x", "run-x", "ns", 0, bound)
	isolated := isolatedWorkspaces(spec)
	got := map[string][]string{}
	for _, s := range spec.Steps {
		s := *s.DeepCopy()
		sr := stepReplacements(r, isolated, s)
		container.ApplyStepReplacements(&s, sr.str, sr.arr)
		got[s.Name] = s.Args
	}
	want := map[string][]string{
		"build":  {"kmod-build", "--work=" + bound["work"], "--k=", "false"},
		"attest": {"kmod-attest", "--work=" + bound["work"], "--k=" + bound["cosign-key"], "true"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("step args (-want +got):\n%s", d)
	}
}
