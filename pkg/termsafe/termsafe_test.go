package termsafe

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestEscapeWritesTerminalControlsAsGoEscapes(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain ASCII is unchanged", "pool worker: 3 nodes updated", "pool worker: 3 nodes updated"},
		{"printable Unicode is unchanged", "Größe — 日本語 ✓ \uFFFD", "Größe — 日本語 ✓ \uFFFD"},
		{"empty", "", ""},
		{"registry message with screen clear, colour and window title",
			"denied \x1b[2J\x1b[31mFAKE-SUCCESS\x1b]0;owned\a",
			`denied \x1b[2J\x1b[31mFAKE-SUCCESS\x1b]0;owned\a`},
		{"newline, carriage return and tab", "a\nb\rc\td", `a\nb\rc\td`},
		{"NUL, DEL and the other short forms", "\x00\x7f\b\f\v", `\x00\x7f\b\f\v`},
		{"C1 controls as runes", "\u0085\u009b31m", `\u0085\u009b31m`},
		{"bytes that are not UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"a lone C1 byte", "\x9b2J", `\x9b2J`},
		{"bidi overrides and isolates", "user\u202Etxt.exe\u2066x\u2069\u200F\u061C", `user\u202etxt.exe\u2066x\u2069\u200f\u061c`},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"backslashes stay as they are", `C:\path \x1b`, `C:\path \x1b`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, Escape(c.in)); diff != "" {
				t.Errorf("Escape(%q) (-want +got):\n%s", c.in, diff)
			}
		})
	}
}

// A string with nothing to escape is returned without a copy: Escape sits
// on every output path, and most of what it sees is clean.
func TestEscapeOfCleanTextDoesNotAllocate(t *testing.T) {
	s := strings.Repeat("registry.example/kiln/os@sha256:0123 ", 20)
	if n := testing.AllocsPerRun(100, func() { _ = Escape(s) }); n != 0 {
		t.Errorf("Escape of clean text: %v allocations, want 0", n)
	}
}

// FuzzEscape: whatever the input, the output is UTF-8 a terminal only
// shows (no control, bidi or separator rune), escaping it again changes
// nothing, and text with nothing to escape passes through unchanged.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "plain", "denied \x1b[2J\x1b[31mFAKE\x1b]0;owned\a", "\xff\xfe", "\u202e\u2028", `\x1b`, "\u009b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Escape(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Escape(%q) = %q: not UTF-8", s, got)
		}
		for _, r := range got {
			if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029' {
				t.Fatalf("Escape(%q) = %q: holds %U", s, got, r)
			}
		}
		if again := Escape(got); again != got {
			t.Fatalf("Escape is not idempotent: %q -> %q -> %q", s, got, again)
		}
		if firstUnsafe(s) < 0 && got != s {
			t.Fatalf("Escape(%q) = %q: changed text with nothing to escape", s, got)
		}
		if firstUnsafe(s) >= 0 && got == s {
			t.Fatalf("Escape(%q) left an unsafe rune", s)
		}
	})
}
