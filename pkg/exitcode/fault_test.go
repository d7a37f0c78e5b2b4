package exitcode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// statusError stands for a client's HTTP error type, which its package
// registers with RegisterFault (pkg/registry does so for
// go-containerregistry's transport.Error; its test covers that type).
type statusError struct{ code int }

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d", e.code) }

func init() {
	RegisterFault(func(err error) bool {
		var se *statusError
		return errors.As(err, &se) && FaultStatus(se.code)
	})
}

// A fault is an error that says no answer came (network, auth, missing
// object, throttling, server error, timeout), through any wrapping; an
// answer about the image (a bad signature, a 400) is not.
func TestIsFaultTellsNoAnswerFromAVerdict(t *testing.T) {
	sentinel := NewFault("registry unreachable")
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain error", errors.New("no signature exists"), false},
		{"sentinel, wrapped", fmt.Errorf("verifying x: %w: boom", sentinel), true},
		{"connection refused", fmt.Errorf("pinging: %w", dial), true},
		{"url error", &url.Error{Op: "Get", URL: "https://127.0.0.1:1/v2/", Err: errors.New("eof")}, true},
		{"deadline", fmt.Errorf("reading: %w", context.DeadlineExceeded), true},
		{"canceled", context.Canceled, true},
		{"bare errno", fmt.Errorf("x: %w", syscall.ECONNRESET), true},
		{"HTTP 401", &statusError{code: 401}, true},
		{"HTTP 403", &statusError{code: 403}, true},
		{"HTTP 404", &statusError{code: 404}, true},
		{"HTTP 429", &statusError{code: 429}, true},
		{"HTTP 500", fmt.Errorf("get: %w", &statusError{code: 500}), true},
		{"HTTP 503", &statusError{code: 503}, true},
		{"HTTP 400", &statusError{code: 400}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IsFault(c.err); got != c.want {
				t.Errorf("IsFault(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

// Refused gives exit 3 to a failed check and leaves a fault a failure
// (exit 1): the check never got its answer.
func TestRefusedOnlyForAnsweredChecks(t *testing.T) {
	type row struct {
		Name string
		Code int
	}
	var got []row
	for _, c := range []struct {
		name string
		err  error
	}{
		{"no signature", errors.New("A signature was required, but no signature exists")},
		{"unreachable", fmt.Errorf("reading signatures: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED})},
		{"auth", fmt.Errorf("reading: %w", NewFault("registry authentication failed"))},
		{"server error", &statusError{code: 502}},
	} {
		got = append(got, row{c.name, CodeOf(Refused(c.err))})
	}
	want := []row{{"no signature", ExitRefused}, {"unreachable", ExitFailure}, {"auth", ExitFailure}, {"server error", ExitFailure}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("exit codes (-want +got):\n%s", d)
	}
}

// FaultStatus is the set of HTTP statuses that carry no answer.
func TestFaultStatus(t *testing.T) {
	var got []int
	for code := 100; code < 600; code++ {
		if FaultStatus(code) && code < 500 {
			got = append(got, code)
		}
	}
	if d := cmp.Diff([]int{401, 403, 404, 408, 429}, got); d != "" {
		t.Errorf("4xx fault statuses (-want +got):\n%s", d)
	}
	if !FaultStatus(500) || !FaultStatus(599) || FaultStatus(200) {
		t.Error("5xx must be faults, 200 not")
	}
}
