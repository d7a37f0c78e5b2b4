package cli

import (
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// reproduce takes its one image as the argument or as --image; anything
// else is a usage error (exit 2) before any registry is asked.
func TestReproduceArguments(t *testing.T) {
	ref := "registry.example.com/os@sha256:" + strings.Repeat("a", 64)
	cases := []struct {
		args []string
		want string // "" means past validation (then no key: exit 2 naming it)
	}{
		{[]string{ref}, ""},
		{[]string{"--image", ref}, ""},
		{[]string{}, "--image is required"},
		{[]string{"registry.example.com/os:latest"}, "a tag could move"},
		{[]string{ref, ref}, "accepts at most 1 arg"},
		{[]string{"--image", ref, ref}, "not both"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			args := append([]string{"reproduce", "--public-key", t.TempDir() + "/none.pub"}, c.args...)
			r := execute(newSteps(noEnv), args...)
			if c.want == "" {
				if r.code != exitcode.ExitUsage || !strings.Contains(r.err, "no signing identity") {
					t.Errorf("exit %d %q, want 2: no identity to verify with", r.code, r.err)
				}
				return
			}
			if r.code != exitcode.ExitUsage || !strings.Contains(r.err, c.want) {
				t.Errorf("exit %d %q, want 2 naming %q", r.code, r.err, c.want)
			}
		})
	}
}
