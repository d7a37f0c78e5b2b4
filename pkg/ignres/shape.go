package ignres

import "fmt"

// MaxDepth is how deep the JSON of an Ignition config may nest: objects
// and arrays, the document itself being level 1. The deepest field of any
// Ignition spec kiln reads nests 8 levels (3.5's
// storage.files[].append[].httpHeaders[] and
// ignition.security.tls.certificateAuthorities[].httpHeaders[]); 16 leaves
// that room twice over. Ignition keeps unknown keys (a warning, not an
// error), and its parser (github.com/coreos/vcontext) builds a node with
// its position for every value of the document, so a config of a few
// kilobytes nested thousands of levels deep cost render hundreds of MiB
// before this check; Kubernetes' 10,000 for API objects is far too many
// for a format this shallow.
const MaxDepth = 16

// MaxValues is how many JSON values an Ignition config may hold: objects,
// arrays, strings (object keys included), numbers and literals. vcontext
// spends about 1 KiB per value, so a 1.5 MiB config of nothing but
// unknown keys holds some 450,000 and costs nearly 500 MiB to parse;
// 131,072 values keep the whole render of the widest accepted config
// under 256 MiB (render's BenchmarkRenderWidestConfigPeakRSS: 189 MiB peak
// RSS, against 52 MiB for a one-file config). A real config is far smaller: a
// file entry is about ten values, so the cap admits some 13,000 files,
// where OpenShift's rendered configs hold a few hundred.
const MaxValues = 1 << 17

// ShapeError says an Ignition config's JSON is deeper or larger than kiln
// parses.
type ShapeError struct {
	// Rule is what was exceeded; Offset the byte at which it was.
	Rule   string
	Offset int
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("%s (at byte %d); refused before parsing", e.Rule, e.Offset)
}

// CheckShape refuses JSON that nests deeper than MaxDepth or holds more
// than MaxValues values, in one pass that allocates nothing, before
// Ignition's parser sees the bytes. It checks only the shape: strings are
// skipped with their escapes, and whatever is not JSON is left for the
// parser to refuse.
func CheckShape(raw []byte) error {
	depth, values := 0, 0
	inString, escaped := false, false
	// prev is the last byte outside strings that was not white space; a
	// number or literal starts after one of these.
	prev := byte(',')
	for i, c := range raw {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			inString = true
			values++
		case '{', '[':
			depth++
			values++
			if depth > MaxDepth {
				return &ShapeError{Rule: fmt.Sprintf("JSON nests more than %d levels deep, kiln's limit for an Ignition config (its deepest field nests 8)", MaxDepth), Offset: i}
			}
		case '}', ']':
			depth--
		default:
			if prev == ',' || prev == ':' || prev == '[' {
				values++ // a number or a literal
			}
		}
		if values > MaxValues {
			return &ShapeError{Rule: fmt.Sprintf("JSON holds more than %d values, kiln's limit for an Ignition config", MaxValues), Offset: i}
		}
		prev = c
	}
	return nil
}
