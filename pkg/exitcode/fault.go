package exitcode

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
)

// A fault is an error that says a command never got its answer: the
// registry or cluster could not be reached, refused the credentials,
// failed (5xx, 429), timed out, or does not hold the object. It says
// nothing about whether an image is trusted, so it is a failure (exit 1)
// even when it happens in the middle of a verification: a script that
// alerts on exit 3 as "untrusted image" must not fire on a network outage.
//
// faulter is how a package marks its own sentinel errors as faults
// (pkg/registry's ErrAuth, ErrUnreachable, ErrNotFound) without this
// package importing it.
type faulter interface {
	error
	Fault() bool
}

// faultSentinel is a sentinel error that IsFault recognises.
type faultSentinel struct{ msg string }

func (e *faultSentinel) Error() string { return e.msg }
func (e *faultSentinel) Fault() bool   { return true }

// faultKinds are the classifiers packages register for error types this
// package does not know: pkg/registry registers go-containerregistry's
// transport.Error, the only package allowed to import it. A binary that
// can hold such an error links pkg/registry, so its classifier is there.
var (
	faultKindsMu sync.RWMutex
	faultKinds   []func(error) bool
)

// RegisterFault adds a classifier IsFault consults: it reports whether
// err's chain holds an error of the registering package's kind that is a
// fault. Call it from an init function.
func RegisterFault(f func(error) bool) {
	faultKindsMu.Lock()
	defer faultKindsMu.Unlock()
	faultKinds = append(faultKinds, f)
}

// NewFault returns a sentinel error (compared with errors.Is) that IsFault
// recognises anywhere in a chain.
func NewFault(msg string) error { return &faultSentinel{msg: msg} }

// IsFault reports whether err's chain shows a command never got its
// answer: a sentinel made by NewFault, a registry's HTTP error with a
// status that is not about the image's trust (401, 403, 404, 408, 429,
// 5xx; through the classifiers of RegisterFault), a network error
// (net.Error, which *url.Error is, or a refused or reset connection), or
// a context that ended.
func IsFault(err error) bool {
	if err == nil {
		return false
	}
	var f faulter
	if errors.As(err, &f) && f.Fault() {
		return true
	}
	faultKindsMu.RLock()
	kinds := faultKinds
	faultKindsMu.RUnlock()
	for _, kind := range kinds {
		if kind(err) {
			return true
		}
	}
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// FaultStatus reports whether an HTTP status says the server could not
// or would not answer (auth, missing object, throttling, server error),
// for clients whose error types IsFault does not know.
func FaultStatus(code int) bool {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusRequestTimeout, http.StatusTooManyRequests:
		return true
	}
	return code >= http.StatusInternalServerError
}
