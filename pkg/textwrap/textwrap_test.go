package textwrap

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWrap: lines stay within width, break at spaces, keep every word
// whole unless it alone is longer than width, and lose no text.
func TestWrap(t *testing.T) {
	cfg := "rendered-worker-0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name  string
		in    string
		width int
		want  []string
	}{
		{"fits", "one two", 10, []string{"one two"}},
		{"breaks at spaces", "one two three", 7, []string{"one two", "three"}},
		{"empty", "  ", 10, nil},
		{"config name moves whole to the next line", "Node worker-0 update to config " + cfg + " is done", 60,
			[]string{"Node worker-0 update to config", cfg + " is done"}},
		{"word longer than width is cut", "a " + strings.Repeat("x", 12), 5, []string{"a", "xxxxx", "xxxxx", "xx"}},
		{"exact width word", "abcde fg", 5, []string{"abcde", "fg"}},
		{"runes, not bytes", "äöü äöü", 7, []string{"äöü äöü"}},
		{"width below one", "ab", 0, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Wrap(tc.in, tc.width)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Wrap (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzWrap: no line is wider than width or empty, and the words come back
// in order when the lines are joined (a cut word rejoins).
func FuzzWrap(f *testing.F) {
	f.Add("Node worker-0 update to config rendered-worker-abc is done", 20)
	f.Add("", 1)
	f.Fuzz(func(t *testing.T, s string, width int) {
		width = width%200 + 1
		if width < 1 {
			width = -width + 1
		}
		lines := Wrap(s, width)
		for _, l := range lines {
			if n := len([]rune(l)); n > width || n == 0 {
				t.Fatalf("line %q has %d runes, width %d", l, n, width)
			}
		}
		var want string
		for _, w := range strings.Fields(s) {
			want += string([]rune(w)) // invalid UTF-8 reads as U+FFFD
		}
		if got := strings.ReplaceAll(strings.Join(lines, ""), " ", ""); got != strings.ReplaceAll(want, " ", "") {
			t.Fatalf("Wrap(%q, %d) lost text: %q", s, width, lines)
		}
	})
}
