package step

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// A stage has no default folder: --work and --results-dir are both
// required, each named when missing.
func TestOptionsRequireWorkAndResultsDir(t *testing.T) {
	cases := []struct {
		o    Options
		want []string // flags named in the error; nil means valid
	}{
		{Options{Pool: "worker"}, []string{"--work is required", "--results-dir is required"}},
		{Options{Pool: "worker", Work: "/w"}, []string{"--results-dir is required"}},
		{Options{Pool: "worker", ResultsDir: "/r"}, []string{"--work is required"}},
		{Options{Pool: "worker", Work: "/w", ResultsDir: "/r"}, nil},
	}
	for _, c := range cases {
		err := c.o.Validate()
		var got []string
		for _, w := range []string{"--work is required", "--results-dir is required"} {
			if err != nil && strings.Contains(err.Error(), w) {
				got = append(got, w)
			}
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%+v: named (-want +got):\n%s", c.o, diff)
		}
		if err != nil && exitcode.CodeOf(err) != exitcode.ExitUsage {
			t.Errorf("%+v: exit %d, want %d", c.o, exitcode.CodeOf(err), exitcode.ExitUsage)
		}
	}
	if o := DefaultOptions(); o.Work != "" || o.ResultsDir != "" {
		t.Errorf("DefaultOptions() = %+v: want no folder", o)
	}
}

// -o/--output takes text or json, nothing else.
func TestValidateFormat(t *testing.T) {
	for format, ok := range map[string]bool{"text": true, "json": true, "": false, "yaml": false, "JSON": false, "out.json": false} {
		if err := ValidateFormat(format); (err == nil) != ok {
			t.Errorf("ValidateFormat(%q) = %v, want ok=%v", format, err, ok)
		}
	}
}
