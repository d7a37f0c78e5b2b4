package signing

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/trust"
)

func TestNodeLintByproduct(t *testing.T) {
	cases := []struct {
		name    string
		lint    *trust.NodeLint
		wantURI string
		wantErr string
	}{
		{"no check recorded (not a node image)", nil, "", ""},
		{"passed with warnings", &trust.NodeLint{Rules: "kiln-nodeimport/1", Pass: true, Warnings: []string{"a", "b"}},
			"kiln:node-lint?rules=kiln-nodeimport%2F1&pass=true&warnings=2", ""},
		{"failed", &trust.NodeLint{Rules: "kiln-nodeimport/1"}, "", "failed the node import check"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := nodeLintByproduct(trust.Record{Ref: "r@sha256:" + strings.Repeat("a", 64), NodeLint: c.lint})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var uri string
			if got != nil {
				uri = got.URI
				if got.Name != trust.NodeLintByproduct || !strings.HasPrefix(got.Digest, "sha256:") {
					t.Errorf("byproduct %+v", got)
				}
			}
			if d := cmp.Diff(c.wantURI, uri); d != "" {
				t.Errorf("URI (-want +got):\n%s", d)
			}
		})
	}
}
