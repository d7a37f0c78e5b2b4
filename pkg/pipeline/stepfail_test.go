package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTailFileKeepsTheLastLines(t *testing.T) {
	long := strings.Repeat("y", maxTailLine+50)
	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		{"empty log", "", nil},
		{"fewer lines than asked", "one\ntwo\n", []string{"one", "two"}},
		{"no final newline", "one\ntwo", []string{"one", "two"}},
		{"more lines than asked", "1\n2\n3\n4\n", []string{"3", "4"}},
		{"long line is cut", "a\n" + long + "\n", []string{"a", long[:maxTailLine] + "…"}},
		// Only the last tailBytes are read; the partial line they start
		// with is dropped rather than shown cut at the front.
		{"huge log", strings.Repeat("x", tailBytes) + "\nlast\n", []string{"last"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "step.log")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := tailFile(path, 2); !slices.Equal(got, tc.want) {
				t.Errorf("tailFile = %q, want %q", got, tc.want)
			}
		})
	}
	if got := tailFile(filepath.Join(t.TempDir(), "missing.log"), 2); got != nil {
		t.Errorf("tailFile(missing) = %q, want none", got)
	}
}

func TestStepFailureNamesExitCodeOrSignal(t *testing.T) {
	log := filepath.Join(t.TempDir(), "step.log")
	if err := os.WriteFile(log, []byte("boom\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(script string) error {
		return exec.CommandContext(context.Background(), "sh", "-c", script).Run()
	}
	for _, tc := range []struct {
		name, script, want string
	}{
		{"exit code", "exit 4", "exit code 4"},
		{"killed", "kill -KILL $$", "killed by signal killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newStepFailure("build", 1, 3, log, run(tc.script))
			if got := f.Exit(); got != tc.want {
				t.Errorf("Exit() = %q, want %q", got, tc.want)
			}
			var b strings.Builder
			f.Describe(&b, "image-build", "kiln-image-build")
			want := "  task image-build (Task kiln-image-build), step build (2 of 3): " + tc.want +
				"\n  last line of its log:\n    | boom\n  log: " + log + "\n"
			if b.String() != want {
				t.Errorf("Describe =\n%s\nwant\n%s", b.String(), want)
			}
		})
	}
}

// A log line or cause that holds escape sequences, or a line cut inside a
// rune, is printed escaped.
func TestStepFailureDescribeEscapesLogLines(t *testing.T) {
	log := filepath.Join(t.TempDir(), "step.log")
	cut := strings.Repeat("x", maxTailLine-1) + "é" // é straddles the cut
	if err := os.WriteFile(log, []byte("\x1b[2J\x1b]0;owned\a\n"+cut+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newStepFailure("build", 0, 1, log, exec.CommandContext(context.Background(), "sh", "-c", "exit 1").Run())
	f.Cause = "denied \x1b[31mFAKE"
	var b strings.Builder
	f.Describe(&b, "render", "")
	got := b.String()
	for _, want := range []string{`cause: denied \x1b[31mFAKE`, `| \x1b[2J\x1b]0;owned\a`, `| ` + strings.Repeat("x", maxTailLine-1) + `\xc3…`} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe lacks %q:\n%s", want, got)
		}
	}
	if strings.ContainsAny(got, "\x1b\a") || !utf8.ValidString(got) {
		t.Errorf("Describe printed raw controls or invalid UTF-8: %q", got)
	}
}
