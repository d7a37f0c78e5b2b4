package imageref

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Each flag check names the flag, the value and the rule; empty optional
// flags pass; a digest reference passes RequireDigestRef.
func TestReferenceFlagErrorsNameFlagValueAndRule(t *testing.T) {
	digest := "quay.io/org/os@sha256:" + strings.Repeat("a", 64)
	cases := []struct {
		name string
		err  error
		want string // "" means nil
	}{
		{"digest", RequireDigestRef("image", digest), ""},
		{"missing", RequireDigestRef("image", ""), "--image is required"},
		{"tag", RequireDigestRef("image", "quay.io/org/os:v1"), `--image "quay.io/org/os:v1": want repository@sha256:<64 hex> (a tag could move)`},
		{"empty path component", RequireDigestRef("image", "a//b@sha256:"+strings.Repeat("a", 64)), `--image "a//b@sha256:` + strings.Repeat("a", 64) + `": want repository@sha256:<64 hex>: `},
		{"tag and digest", RequireDigestRef("image", "quay.io/org/os:v1@sha256:"+strings.Repeat("a", 64)), "drop the tag"},
		{"short digest", RequireDigestRef("image", "quay.io/org/os@sha256:abc"), `--image "quay.io/org/os@sha256:abc": want repository@sha256:<64 hex>: `},
		{"optional ref empty", ValidRef("base", ""), ""},
		{"ref by tag", ValidRef("base", "quay.io/org/os:v1"), ""},
		{"malformed ref", ValidRef("base", "quay.io//os:v1"), `--base "quay.io//os:v1": want an image reference`},
		{"repository", ValidRepository("repository", "quay.io/org/os"), ""},
		{"repository with tag", ValidRepository("repository", "quay.io/org/os:v1"), `--repository "quay.io/org/os:v1": want a repository without tag or digest`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ""
			if c.err != nil {
				got = c.err.Error()
				if c.want != "" && strings.Contains(got, c.want) {
					got = c.want
				}
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	if !IsDigestRef(digest) || IsDigestRef("a//b@sha256:"+strings.Repeat("a", 64)) {
		t.Error("IsDigestRef disagrees with ParseDigestRef")
	}
}
