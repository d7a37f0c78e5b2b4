package ignres

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func nest(depth int, leaf string) string {
	return strings.Repeat(`{"k":`, depth) + leaf + strings.Repeat("}", depth)
}

// values returns a JSON object of n values: the object, and n-1 more as
// keys and numbers.
func values(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := 1; i < n; i += 2 {
		if i > 1 {
			b.WriteString(",")
		}
		if i+1 < n {
			b.WriteString(`"k":1`)
		} else {
			b.WriteString(`"k":`) // odd count: the last key's value is an array
		}
	}
	b.WriteString("}")
	return b.String()
}

// TestCheckShapeRefusesDeepAndWideJSON checks the depth and value caps at
// their boundary, and that what looks like structure inside strings is
// not counted.
func TestCheckShapeRefusesDeepAndWideJSON(t *testing.T) {
	deepest := `{"ignition":{"version":"3.5.0","security":{"tls":{"certificateAuthorities":[{"source":"https://x","httpHeaders":[{"name":"a","value":"b"}]}]}}}}`
	tests := []struct {
		name, raw string
		want      string // "" for accepted, else the start of the error
	}{
		{"the deepest Ignition field", deepest, ""},
		{"at the depth cap", nest(MaxDepth, "1"), ""},
		{"one level over", nest(MaxDepth+1, "1"), "JSON nests more than 16 levels deep"},
		{"arrays count as levels", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "JSON nests more than 16 levels deep"},
		{"the nested-key bomb", `{"ignition":{"version":"3.5.0"},"x":` + nest(9000, "1") + `}`, "JSON nests more than 16 levels deep, kiln's limit for an Ignition config (its deepest field nests 8) (at byte 111); refused before parsing"},
		{"braces in strings", `{"k":"` + strings.Repeat("{[", 100) + `\"{{{"}`, ""},
		{"escaped backslash ends a string", `{"k":"\\","l":` + nest(MaxDepth, "1") + `}`, "JSON nests more than 16 levels deep"},
		{"at the value cap", values(MaxValues), ""},
		{"one value over", values(MaxValues + 2), "JSON holds more than 131072 values"},
		{"literals count", "[" + strings.Repeat("true,", MaxValues) + "null]", "JSON holds more than 131072 values"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckShape([]byte(tc.raw))
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.As(err, new(*ShapeError)) {
					t.Errorf("error %v is not a *ShapeError", err)
				}
			}
			if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
				t.Errorf("CheckShape: %s", cmp.Diff(tc.want, got))
			}
		})
	}
}

// FuzzCheckShape compares CheckShape with encoding/json's tokenizer on
// valid JSON: both must agree on the depth and the number of values, so the
// byte scanner neither misses a level hidden by a string nor counts one
// inside it.
func FuzzCheckShape(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,"}",{"b":"\\"}]}`, nest(MaxDepth+1, `"x"`), `[true,false,null,-1.5e3]`, `"{"`, `{"a\"{":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := CheckShape(raw) // must not panic on anything
		if !json.Valid(raw) {
			return
		}
		depth, maxDepth, n := 0, 0, 0
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber() // 1e1000 is valid JSON, not a float64
		for {
			tok, derr := dec.Token()
			if derr == io.EOF {
				break
			}
			if derr != nil {
				t.Fatalf("tokenizing valid JSON: %v", derr)
			}
			switch tok {
			case json.Delim('{'), json.Delim('['):
				depth++
				n++
				maxDepth = max(maxDepth, depth)
			case json.Delim('}'), json.Delim(']'):
				depth--
			default:
				n++
			}
		}
		want := maxDepth <= MaxDepth && n <= MaxValues
		if (err == nil) != want {
			t.Errorf("CheckShape(%q) = %v; tokenizer says depth %d, %d values", raw, err, maxDepth, n)
		}
	})
}
