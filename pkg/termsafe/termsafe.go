package termsafe

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every rune a terminal might act on written as a Go
// escape, in the manner of strconv.Quote:
//
//   - C0 controls, DEL and C1 controls (\a, \n, \x1b, \u009b);
//   - bytes that are not UTF-8 (\xff);
//   - bidirectional controls (U+202E and its kin, the runes of "Trojan
//     Source", https://trojansource.codes/) and the line and paragraph
//     separators U+2028 and U+2029 (\u202e).
//
// Newlines and tabs are escaped too: every sink kiln has is one line (a log
// line, a cause, a result), and a newline there could forge the next line.
// Backslashes are left alone, so Escape is idempotent: a sink may escape
// text an earlier sink already escaped without doubling it. The price is
// that a literal `\x1b` in s reads the same as an escaped ESC, which is
// harmless for text meant for people.
//
// Everything else, including any printable Unicode, is returned unchanged;
// a string with nothing to escape is returned as is, without copying.
func Escape(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
		case unsafe(r):
			b.WriteString(escapeRune(r))
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// firstUnsafe is the byte index of the first rune Escape changes, -1 when
// there is none.
func firstUnsafe(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
		if unsafe(r) {
			return i
		}
	}
	return -1
}

// unsafe reports whether a terminal might act on r rather than show it.
func unsafe(r rune) bool {
	return unicode.IsControl(r) || // C0, DEL, C1
		unicode.Is(unicode.Bidi_Control, r) ||
		r == '\u2028' || r == '\u2029'
}

// escapeRune writes r as strconv.Quote would: \n, \t and the other short
// forms, \xNN below 0x80, \uNNNN above.
func escapeRune(r rune) string {
	if r < utf8.RuneSelf {
		// strconv.QuoteRune gives the short forms (\a \b \f \n \r \t \v)
		// and \x1b for the rest, between single quotes.
		q := strconv.QuoteRune(r)
		return q[1 : len(q)-1]
	}
	return `\u` + hex4(r)
}

const digits = "0123456789abcdef"

func hex2(c byte) string { return string([]byte{digits[c>>4], digits[c&0xf]}) }

func hex4(r rune) string {
	return string([]byte{digits[r>>12&0xf], digits[r>>8&0xf], digits[r>>4&0xf], digits[r&0xf]})
}
