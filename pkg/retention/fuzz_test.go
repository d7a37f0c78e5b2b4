package retention

import (
	"strings"
	"testing"
)

// FuzzClassify: every tag lands exactly once, artifact tags under the
// subject their name carries, and a candidate always has a kiln- tag.
func FuzzClassify(f *testing.F) {
	f.Add("kiln-"+hexA, "sha256:"+hexB, "sha256-"+hexB+".sig")
	f.Add("latest", "", "sha256-abc.att")
	f.Fuzz(func(t *testing.T, tag, dig, other string) {
		tags := map[string]string{tag: dig, other: dig}
		l := Classify(tags)
		seen := 0
		for d, ts := range l.Images {
			for _, x := range ts {
				seen++
				if tags[x] != d {
					t.Fatalf("tag %q listed under %q, names %q", x, d, tags[x])
				}
			}
		}
		for subject, ts := range l.Artifacts {
			for _, x := range ts {
				seen++
				if "sha256:"+strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(x, "sha256-"), ".sig"), ".att") != subject {
					t.Fatalf("artifact tag %q listed under %q", x, subject)
				}
			}
		}
		if seen != len(tags) {
			t.Fatalf("%d tags classified, %d given", seen, len(tags))
		}
		for _, d := range l.Candidates() {
			if !strings.HasPrefix(strings.Join(l.Images[d], " "), TagPrefix) && !strings.Contains(strings.Join(l.Images[d], " "), " "+TagPrefix) {
				t.Fatalf("candidate %q has no kiln- tag: %v", d, l.Images[d])
			}
		}
	})
}

// FuzzResolve: a reference is either kept by its well-formed digest,
// resolved as a tag, or refused with an error; it never panics.
func FuzzResolve(f *testing.F) {
	f.Add("registry.example.com/kiln/os@sha256:" + hexA)
	f.Add("registry.example.com/kiln/os:latest")
	f.Add("x@sha256:zz")
	f.Fuzz(func(t *testing.T, ref string) {
		s, err := Resolve([]Named{{Image: ref, Reason: "r"}}, func(string) (string, error) { return "sha256:" + hexB, nil })
		if err != nil {
			return
		}
		for d := range s {
			if !strings.HasPrefix(d, "sha256:") {
				t.Fatalf("kept %q for %q", d, ref)
			}
		}
	})
}
