package cli

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/pipeline"
)

// Every kiln-steps step of the repository's Tasks passes only flags its
// subcommand has, none of them a deprecated name, and names its folders:
// a stage with --work and --results-dir is given both (they have no
// default), so a renamed or newly required flag cannot break a Task
// unnoticed until a cluster runs it.
func TestTasksUseCurrentFlagsAndNameTheirFolders(t *testing.T) {
	tasks, err := pipeline.LoadTasks(context.Background(), filepath.Join("..", "..", "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for name, task := range tasks {
		for _, s := range task.Spec.Steps {
			if len(s.Command) != 1 || s.Command[0] != StepsName || len(s.Args) == 0 {
				continue
			}
			steps++
			where := name + "/" + s.Name
			cmd, _, err := newSteps(noEnv).Find(s.Args[:1])
			if err != nil || cmd.Name() != s.Args[0] {
				t.Errorf("%s: %s is not a kiln-steps subcommand (%v)", where, s.Args[0], err)
				continue
			}
			var given []string
			for _, a := range s.Args[1:] {
				if !strings.HasPrefix(a, "--") {
					continue // an argument, such as $(params.statuses[*])
				}
				flag, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
				given = append(given, flag)
				f := cmd.Flags().Lookup(flag)
				switch {
				case f == nil:
					t.Errorf("%s: %s has no flag --%s", where, cmd.CommandPath(), flag)
				case f.Deprecated != "":
					t.Errorf("%s: --%s is deprecated: %s", where, flag, f.Deprecated)
				}
			}
			env := s.Env
			if task.Spec.StepTemplate != nil {
				env = append(env, task.Spec.StepTemplate.Env...)
			}
			for _, folder := range []string{"work", "results-dir"} {
				if cmd.Flags().Lookup(folder) != nil && !slices.Contains(given, folder) && !hasEnv(env, folder) {
					t.Errorf("%s: %s is not given --%s", where, cmd.CommandPath(), folder)
				}
			}
		}
	}
	if steps < 10 {
		t.Errorf("found %d kiln-steps steps in tasks/, want every stage's", steps)
	}
}

// hasEnv reports whether a step sets the environment variable that
// stands in for flag.
func hasEnv(env []corev1.EnvVar, flag string) bool {
	want := map[string]string{"work": base.EnvWork, "results-dir": base.EnvResultsDir}[flag]
	for _, e := range env {
		if e.Name == want {
			return true
		}
	}
	return false
}
