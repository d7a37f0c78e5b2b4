package catlint

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestYamllint runs Debian's yamllint as tektoncd/catalog's CI does, with
// its rules (.yamllint at the repository root) on catalog/, tasks/ and
// pipelines/, and with yamllint's default rules on every file the
// generator writes under catalog/, samples and tests included. --strict
// makes warnings fail too.
func TestYamllint(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"catalog rules", []string{"--strict", "-c", ".yamllint", "catalog", "tasks", "pipelines"}},
		{"default rules", []string{"--strict", "-d", "default", "catalog"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command("yamllint", append([]string{"-f", "parsable"}, c.args...)...)
			cmd.Dir = repoRoot
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("yamllint %s: %v\n%s", strings.Join(c.args, " "), err, out)
			}
		})
	}
}

// TestYamllintFindsProblems: the same invocation fails on a file that
// breaks the rules, so a pass above means something.
func TestYamllintFindsProblems(t *testing.T) {
	bad := filepath.Join("testdata", "yamllint-bad.yaml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", filepath.Join(repoRoot, ".yamllint")}, "(trailing-spaces)"},
		{[]string{"-d", "default"}, "(line-length)"},
		{[]string{"-d", "default"}, "(document-start)"},
	} {
		out, err := exec.Command("yamllint", append(append([]string{"--strict", "-f", "parsable"}, c.args...), bad)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("yamllint %v on %s: %v, want a %s problem:\n%s", c.args, bad, err, c.want, out)
		}
	}
}
