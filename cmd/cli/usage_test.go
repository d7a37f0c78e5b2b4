package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// An unknown completion shell, an unknown help topic and an unknown
// command exit 2; cobra's suggestions come on their own lines, after the
// error line and before the hint, escaped like the error.
func TestUnknownShellTopicAndCommandExit2WithSuggestionsOnTheirOwnLines(t *testing.T) {
	cases := []struct {
		root string
		args []string
		want string
	}{
		{StepsName, []string{"completion", "tcsh"}, `kiln-steps completion: unknown shell "tcsh" for "kiln-steps completion": want one of bash, fish, powershell, zsh
Run 'kiln-steps completion --help' for usage.
`},
		{TriggerName, []string{"completion", "tcsh"}, `kiln-trigger completion: unknown shell "tcsh" for "kiln-trigger completion": want one of bash, fish, powershell, zsh
Run 'kiln-trigger completion --help' for usage.
`},
		{StepsName, []string{"help", "rendr"}, "kiln-steps: unknown help topic \"rendr\"\n\nDid you mean this?\n\trender\n\nRun 'kiln-steps --help' for usage.\n"},
		{StepsName, []string{"help", "nothing-like-it"}, "kiln-steps: unknown help topic \"nothing-like-it\"\nRun 'kiln-steps --help' for usage.\n"},
		{StepsName, []string{"rendr"}, "kiln-steps: unknown command \"rendr\" for \"kiln-steps\"\n\nDid you mean this?\n\trender\n\nRun 'kiln-steps --help' for usage.\n"},
		{StepsName, []string{"rend\x1br"}, "kiln-steps: unknown command \"rend\\x1br\" for \"kiln-steps\"\n\nDid you mean this?\n\trender\n\nRun 'kiln-steps --help' for usage.\n"},
	}
	for _, c := range cases {
		t.Run(strings.Join(append([]string{c.root}, c.args...), " "), func(t *testing.T) {
			r := execute(roots()[c.root](), c.args...)
			if r.code != exitcode.ExitUsage || r.out != "" {
				t.Errorf("exit %d, stdout %q; want 2 and nothing on stdout", r.code, r.out)
			}
			if d := cmp.Diff(c.want, r.err); d != "" {
				t.Errorf("stderr (-want +got):\n%s", d)
			}
			if i := rawControls([]byte(r.err)); i >= 0 && r.err[i] != '\t' {
				t.Errorf("stderr holds a raw control byte at %d: %q", i, r.err)
			}
		})
	}
}

// A known help topic, bare help and bare completion still print help and
// exit 0; a known shell prints its script.
func TestKnownHelpTopicsAndShellsExit0(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"help", "render"}, {"help", "version"}, {"completion"}, {"completion", "zsh"}} {
		r := execute(newSteps(noEnv), args...)
		if r.code != exitcode.ExitOK || r.err != "" || r.out == "" {
			t.Errorf("%v: exit %d, stderr %q, %d bytes on stdout; want 0 and output", args, r.code, r.err, len(r.out))
		}
	}
}
