package cli

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/cmd/cli/imagebuildcmd"
	"github.com/kiln-dev/kiln/pkg/pipeline"
)

// Every kiln-steps step of the repository's Tasks, and every step running
// a stage's own binary (kiln-image-build), passes only flags its
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
			where := name + "/" + s.Name
			cmd, args := stepCommand(t, where, s)
			if cmd == nil {
				continue
			}
			steps++
			var given []string
			for _, a := range args {
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

// stepCommand returns the command a step of a kiln Task runs and its
// arguments after the command names: a kiln-steps subcommand, or the root
// of a stage's own binary (pipeline.StageBinaries), which must run the
// stage it is mapped to. It returns nil for other steps, and for a step
// naming no command it fails the test.
func stepCommand(t *testing.T, where string, s tektonv1.Step) (*cobra.Command, []string) {
	t.Helper()
	if len(s.Command) != 1 {
		return nil, nil
	}
	if stage, ok := pipeline.StageBinaries[s.Command[0]]; ok {
		roots := map[string]func(base.LookupEnv) *cobra.Command{imagebuildcmd.Name: imagebuildcmd.NewRootEnv}
		newRoot, ok := roots[s.Command[0]]
		if !ok {
			t.Errorf("%s: %s is not a binary of cmd/", where, s.Command[0])
			return nil, nil
		}
		root := newRoot(noEnv)
		if sub, _, err := newSteps(noEnv).Find([]string{stage}); err != nil || sub.Name() != stage || root.Short != sub.Short {
			t.Errorf("%s: %s does not run kiln-steps %s (%v)", where, s.Command[0], stage, err)
		}
		return root, s.Args
	}
	if s.Command[0] != StepsName || len(s.Args) == 0 {
		return nil, nil
	}
	cmd, _, err := newSteps(noEnv).Find(s.Args[:1])
	if err != nil || cmd.Name() != s.Args[0] {
		t.Errorf("%s: %s is not a kiln-steps subcommand (%v)", where, s.Args[0], err)
		return nil, nil
	}
	return cmd, s.Args[1:]
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
