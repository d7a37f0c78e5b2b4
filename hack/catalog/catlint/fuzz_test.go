package catlint

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

// FuzzCheckImage: CheckImage never panics, and accepts only references
// that parse strictly with a tag and a digest.
func FuzzCheckImage(f *testing.F) {
	f.Add("ghcr.io/kiln-dev/kiln-steps:v0.1.0@sha256:" + strings.Repeat("a", 64))
	f.Add("$(params.kiln-image)")
	f.Add("busybox")
	f.Add("localhost:5000/x:latest@sha256:" + strings.Repeat("0", 64))
	f.Fuzz(func(t *testing.T, ref string) {
		if CheckImage(ref) != "" {
			return
		}
		if _, err := name.NewDigest(ref, name.StrictValidation); err != nil || strings.Contains(ref, "$(") {
			t.Fatalf("CheckImage accepted %q: %v", ref, err)
		}
	})
}

// FuzzSubstituteParams: substitution never panics, and when every name
// has a default (one that cannot form a reference itself) no reference to
// a known name is left.
func FuzzSubstituteParams(f *testing.F) {
	f.Add("$(params.a)/$(params['b'])", "x")
	f.Add("$(params.a", "y")
	f.Fuzz(func(t *testing.T, s, v string) {
		if strings.ContainsAny(v, "$()") {
			return
		}
		out := SubstituteParams(s, map[string]string{"a": v, "b": v})
		for _, m := range paramRE.FindAllStringSubmatch(out, -1) {
			if n := m[1] + m[2]; n == "a" || n == "b" {
				t.Fatalf("SubstituteParams(%q) = %q left %s", s, out, m[0])
			}
		}
	})
}
