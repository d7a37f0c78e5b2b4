package prune

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidateReportsEveryBadFlagBeforeAnyIO(t *testing.T) {
	valid := func() *Options {
		o := DefaultOptions()
		o.Work, o.ResultsDir = "/tmp/w", "/tmp/r"
		o.Repositories = []string{"registry.example.com/kiln/os"}
		return o
	}
	cases := []struct {
		name string
		edit func(o *Options)
		want []string // substrings of the error, in order; nil means valid
	}{
		{"defaults with a repository", func(*Options) {}, nil},
		{"no repository", func(o *Options) { o.Repositories = nil }, []string{"--repository is required"}},
		{"a repository that is no name", func(o *Options) { o.Repositories = []string{"Registry.example.com/UPPER"} }, []string{`--repository "Registry.example.com/UPPER"`}},
		{"a negative keep count", func(o *Options) { o.KeepPerPool = -1 }, []string{"--keep-per-pool -1: want 0 or more images"}},
		{"a live image that is no reference", func(o *Options) { o.LiveImages = []string{"a b"} }, []string{`--live-image "a b"`}},
		{"a folder source", func(o *Options) { o.Kube.Source = "dir:/tmp/x" }, []string{"prune reads the live cluster"}},
		{"no public key and no work folder", func(o *Options) { o.PublicKey, o.Work = "", "" }, []string{"--work", "--public-key"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := valid()
			c.edit(o)
			err := o.Validate()
			if c.want == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil, want an error saying %q", c.want)
			}
			var missing []string
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					missing = append(missing, w)
				}
			}
			if d := cmp.Diff([]string(nil), missing); d != "" {
				t.Errorf("Validate = %q; not said (-want +got):\n%s", err, d)
			}
		})
	}
}
