package pipeline

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
)

// A stage's own binary runs locally as `kiln-steps <stage>` with the same
// flags when only StepBinary is set, and as itself when Commands names a
// binary for it; kiln-steps steps are unchanged.
func TestStageBinaryRunsAsItsSubcommandUnlessGivenItsOwn(t *testing.T) {
	steps, alone := filepath.Join(t.TempDir(), "kiln-steps"), filepath.Join(t.TempDir(), "kiln-image-build")
	type run struct {
		Bin  string
		Args []string
	}
	cases := []struct {
		name     string
		commands map[string]string
		argv     []string
		want     run
	}{
		{"alone through kiln-steps", nil, []string{"kiln-image-build", "--pool=worker"},
			run{steps, []string{"image-build", "--pool=worker"}}},
		{"alone as itself", map[string]string{"kiln-image-build": alone}, []string{"kiln-image-build", "--pool=worker"},
			run{alone, []string{"--pool=worker"}}},
		{"kiln-steps", nil, []string{"kiln-steps", "render", "--pool=worker"},
			run{steps, []string{"render", "--pool=worker"}}},
	}
	for _, tc := range cases {
		e := &Executor{StepBinary: steps, Commands: tc.commands}
		bin, err := e.command(tc.argv[0])
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := run{bin, e.stageArgs(tc.argv)[1:]}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: local run (-want +got):\n%s", tc.name, diff)
		}
	}
}

// CheckKilnTask takes a stage's own binary with flags only, and still
// refuses kiln-steps without a subcommand and any other command.
func TestCheckKilnTaskTakesStageBinaries(t *testing.T) {
	cases := []struct {
		name    string
		command []string
		args    []string
		ok      bool
	}{
		{"stage binary", []string{"kiln-image-build"}, []string{"--pool=worker"}, true},
		{"kiln-steps with subcommand", []string{"kiln-steps"}, []string{"image-build"}, true},
		{"kiln-steps alone", []string{"kiln-steps"}, nil, false},
		{"other binary", []string{"kiln-render"}, []string{"--pool=worker"}, false},
		{"two words", []string{"kiln-image-build", "--pool=worker"}, nil, false},
	}
	got, want := map[string]bool{}, map[string]bool{}
	for _, tc := range cases {
		task := &tektonv1.Task{Spec: tektonv1.TaskSpec{Steps: []tektonv1.Step{{Name: "s", Command: tc.command, Args: tc.args}}}}
		task.Name = "kiln-x"
		got[tc.name] = CheckKilnTask(task) == nil
		want[tc.name] = tc.ok
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("accepted (-want +got):\n%s", diff)
	}
}
