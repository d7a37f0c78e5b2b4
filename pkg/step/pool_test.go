package step

import (
	"strings"
	"testing"
)

// TestValidatePool: --pool is a MachineConfigPool name as the apiserver
// takes it (a lowercase RFC 1123 subdomain, at most 253 characters), and
// a bad one is refused with the apiserver's message.
func TestValidatePool(t *testing.T) {
	for _, tc := range []struct{ pool, wantErr string }{
		{pool: "worker"},
		{pool: "infra-2.example"},
		{pool: strings.Repeat("a", 253)},
		{pool: "", wantErr: "--pool is required"},
		{pool: strings.Repeat("a", 254), wantErr: `--pool "` + strings.Repeat("a", 254) + `": not a MachineConfigPool name: must be no more than 253 characters`},
		{pool: "Worker", wantErr: `--pool "Worker": not a MachineConfigPool name: a lowercase RFC 1123 subdomain must consist of`},
		{pool: "a/b", wantErr: `--pool "a/b": not a MachineConfigPool name: a lowercase RFC 1123 subdomain`},
	} {
		t.Run(tc.pool, func(t *testing.T) {
			o := Options{Pool: tc.pool}
			err := o.ValidatePool()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && !strings.HasPrefix(got, tc.wantErr) {
				t.Errorf("ValidatePool(%.20q…) = %v, want an error starting %.80q", tc.pool, err, tc.wantErr)
			}
		})
	}
}
