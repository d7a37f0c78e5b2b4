package exitcode

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Each typed error maps to its code through any wrapping; other errors
// are failures; nil is success.
func TestCodeOf(t *testing.T) {
	base := errors.New("x")
	cases := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{base, ExitFailure},
		{UsageErrorf("--pool is required"), ExitUsage},
		{ValidationErrors(errors.New("a"), nil, errors.New("b")), ExitUsage},
		{fmt.Errorf("verifying: %w", Refused(base)), ExitRefused},
		{RolledBack(base), ExitRolledBack},
		{fmt.Errorf("rendering: %w", InputRejected(base)), ExitInputRejected},
		{Drift(base), ExitDrift},
		{fmt.Errorf("reproducing: %w", NotReproducible(base)), ExitNotReproducible},
	}
	for _, c := range cases {
		if got := CodeOf(c.err); got != c.want {
			t.Errorf("CodeOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if Refused(nil) != nil || ValidationErrors(nil, nil) != nil {
		t.Error("a nil error must stay nil")
	}
}

// The table has one row per code constant, each code once, in order; the
// Markdown and text forms show every row.
func TestExitCodeTable(t *testing.T) {
	want := []int{ExitOK, ExitFailure, ExitUsage, ExitRefused, ExitRolledBack, ExitInputRejected, ExitDrift, ExitNotReproducible}
	if len(ExitCodes) != len(want) {
		t.Fatalf("%d rows, want %d", len(ExitCodes), len(want))
	}
	var text strings.Builder
	WriteExitCodes(&text)
	md := ExitCodesMarkdown()
	for i, c := range ExitCodes {
		if c.Code != want[i] || c.Name == "" || c.Meaning == "" {
			t.Errorf("row %d: %+v", i, c)
		}
		if !strings.Contains(md, fmt.Sprintf("| %d | %s | %s |", c.Code, c.Name, c.Meaning)) || !strings.Contains(text.String(), c.Meaning) {
			t.Errorf("code %d missing from the printed tables", c.Code)
		}
	}
}
