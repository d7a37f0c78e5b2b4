package registry

import (
	"strings"
	"testing"
)

// TestCheckScopeWildcardDomain: what follows "*." is a DNS subdomain with
// the apiserver's limits (63 characters a label, 253 in all), in any case.
func TestCheckScopeWildcardDomain(t *testing.T) {
	label64 := strings.Repeat("a", 64)
	long := strings.Repeat(strings.Repeat("b", 49)+".", 5) + "com" // 253 with the dots
	for _, tc := range []struct{ scope, wantErr string }{
		{scope: "*.example.com"},
		{scope: "*.Example.COM"},
		{scope: "*." + long[:252]},
		{scope: "*." + label64 + ".com", wantErr: "a wildcard scope is *. followed by a domain, without port, path, tag or digest: must be no more than 63 characters"},
		{scope: "*." + long + "c", wantErr: "a wildcard scope is *. followed by a domain, without port, path, tag or digest: must be no more than 253 characters"},
		{scope: "*.example.com:443", wantErr: "a wildcard scope is *. followed by a domain, without port, path, tag or digest: a lowercase RFC 1123 subdomain"},
	} {
		t.Run(tc.scope, func(t *testing.T) {
			err := checkScope(tc.scope, true)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && !strings.HasPrefix(got, tc.wantErr) {
				t.Errorf("checkScope(%q) = %v, want an error starting %q", tc.scope, err, tc.wantErr)
			}
		})
	}
}
