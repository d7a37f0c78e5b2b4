package catalog

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sourceLikeRunner sources hook as tektoncd/catalog's test runner does
// (test/e2e-common.sh: `source ${taskdir}/tests/pre-apply-taskrun-hook.sh`
// in a bash with set -e), in a clean environment (env -i) holding only
// TMPF, PATH (bash and sed, no kubectl) and extra. It returns TMPF's
// content afterwards and what the runner prints after the hook returned:
// "continued" and any kiln_ variable the hook left behind.
func sourceLikeRunner(t *testing.T, hook []byte, tmpf string, extra ...string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"bash", "sed"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("finding %s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	hookPath := filepath.Join(dir, RunHookFile)
	if err := os.WriteFile(hookPath, hook, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmpf.yaml")
	if err := os.WriteFile(tmp, []byte(tmpf), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-i", "PATH=" + bin, "TMPF=" + tmp}, extra...)
	args = append(args, filepath.Join(bin, "bash"), "-c",
		`set -e; source "$1"; echo continued; compgen -v kiln_ || true`, "runner", hookPath)
	out, err := exec.Command("env", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("sourcing the hook as the catalog's runner does: %v\n%s", err, out)
	}
	got, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	return string(got), string(out)
}

// TestRunHookUnderCatalogRunner: with none of kiln's e2e variables set (as
// under tektoncd/catalog's own runner) the hook returns instead of ending
// the runner, leaves no variable, and fills the placeholders with the
// resource's pinned kiln-image default, OpenShift's integrated registry
// and empty images (the Task's own defaults); with the e2e's values set it
// uses those.
func TestRunHookUnderCatalogRunner(t *testing.T) {
	rs := loadRepo(t)
	const tmpl = "steps: @KILN_E2E_STEPS_IMAGE@\nregistry: @KILN_E2E_REGISTRY@/kiln/x\nimage: \"@KILN_E2E_IMAGE@\"\ndtk: \"@KILN_E2E_DTK_IMAGE@\"\n"
	e2e := []string{
		"KILN_E2E_STEPS_IMAGE=kiln.local/kiln-steps:e2e",
		"KILN_E2E_REGISTRY=10.0.0.2:5000",
		"KILN_E2E_IMAGE=10.0.0.2:5000/kiln/node-image-worker@sha256:" + strings.Repeat("1", 64),
		"KILN_E2E_DTK_IMAGE=10.0.0.2:5000/openshift/dtk@sha256:" + strings.Repeat("2", 64),
	}
	var hooked int
	for _, r := range rs {
		if r.Tests == nil {
			continue
		}
		hooked++
		hook, err := RunHook(r)
		if err != nil {
			t.Fatal(err)
		}
		var def string
		for _, p := range r.Params() {
			if p.Name == StepsImageParam {
				def = p.Default.StringVal
			}
		}
		for _, tc := range []struct {
			name string
			env  []string
			want string
		}{
			{"unset", nil, "steps: " + def + "\nregistry: " + IntegratedRegistry + "/kiln/x\nimage: \"\"\ndtk: \"\"\n"},
			{"e2e", e2e, "steps: kiln.local/kiln-steps:e2e\nregistry: 10.0.0.2:5000/kiln/x\nimage: \"10.0.0.2:5000/kiln/node-image-worker@sha256:" +
				strings.Repeat("1", 64) + "\"\ndtk: \"10.0.0.2:5000/openshift/dtk@sha256:" + strings.Repeat("2", 64) + "\"\n"},
		} {
			t.Run(r.Name+"/"+tc.name, func(t *testing.T) {
				got, out := sourceLikeRunner(t, hook, tmpl, tc.env...)
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("TMPF after the hook (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff("continued\n", out); diff != "" {
					t.Errorf("the runner after the hook (-want +got; a kiln_ line is a leaked variable):\n%s", diff)
				}
			})
		}
	}
	if hooked == 0 {
		t.Fatal("no resource has a tests/ folder")
	}
}

// TestRunHookRefusesTagOnlyDefault: a resource whose kiln-image default is
// not pinned by digest gets no hook; the error names the file and param.
func TestRunHookRefusesTagOnlyDefault(t *testing.T) {
	rs := loadRepo(t)
	r := *rs[0]
	task := r.Task.DeepCopy()
	for i := range task.Spec.Params {
		if task.Spec.Params[i].Name == StepsImageParam {
			task.Spec.Params[i].Default.StringVal = "ghcr.io/kiln-dev/kiln-steps:v0.1.0"
		}
	}
	r.Task = task
	_, err := RunHook(&r)
	if err == nil || !strings.Contains(err.Error(), r.Source) || !strings.Contains(err.Error(), "param kiln-image default") {
		t.Fatalf("RunHook with a tag-only default: %v, want an error naming %s and param kiln-image", err, r.Source)
	}
}
