package env

import (
	"errors"
	"strings"
	"testing"
)

func TestRetryPortClashStartsAgainOnlyWhenAPortWasTaken(t *testing.T) {
	clash := errors.New("tekton-controller exited: listen tcp :44853: bind: address already in use")
	other := errors.New("tekton-controller exited: no kubeconfig")
	for _, tc := range []struct {
		name      string
		errs      []error
		wantCalls int
		wantErr   string
	}{
		{name: "first start works", errs: []error{nil}, wantCalls: 1},
		{name: "a clash, then a start", errs: []error{clash, nil}, wantCalls: 2},
		{name: "another error is not retried", errs: []error{other, nil}, wantCalls: 1, wantErr: "no kubeconfig"},
		{name: "clashes every time", errs: []error{clash, clash, clash, nil}, wantCalls: portClashAttempts,
			wantErr: "3 starts, each found a port taken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			v, err := retryPortClash(func() (int, error) {
				err := tc.errs[calls]
				calls++
				return calls, err
			})
			if calls != tc.wantCalls {
				t.Errorf("calls = %d, want %d", calls, tc.wantCalls)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("err = %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want one with %q", err, tc.wantErr)
			case err == nil && v != calls:
				t.Errorf("value = %d, want the last start's %d", v, calls)
			}
		})
	}
}
