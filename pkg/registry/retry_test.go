package registry

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestRetry: a transient error is tried Backoff.Steps times and the last
// error returned; a permanent one once; a success ends the retries; an
// ended context stops them with f's last error.
func TestRetry(t *testing.T) {
	transient := fmt.Errorf("dial: %w", syscall.ECONNRESET)
	permanent := errors.New("manifest invalid")
	for _, tc := range []struct {
		name      string
		errs      []error // per call; the last repeats
		cancelled bool
		wantCalls int
		wantErr   error
	}{
		{name: "transient every time", errs: []error{transient}, wantCalls: 4, wantErr: transient},
		{name: "permanent", errs: []error{permanent}, wantCalls: 1, wantErr: permanent},
		{name: "transient then success", errs: []error{transient, transient, nil}, wantCalls: 3},
		{name: "cancelled context", errs: []error{transient}, cancelled: true, wantCalls: 1, wantErr: transient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			calls := 0
			r := Remote{Backoff: remote.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 4}}
			err := r.retry(ctx, func() error {
				calls++
				if tc.cancelled {
					cancel()
				}
				return tc.errs[min(calls, len(tc.errs))-1]
			})
			if calls != tc.wantCalls || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("retry: %d calls, %v; want %d calls, %v", calls, err, tc.wantCalls, tc.wantErr)
			}
		})
	}
}
