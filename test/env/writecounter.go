package env

import (
	"net/http"
	"sync/atomic"
)

// WriteCounter is an http.RoundTripper that counts the requests that could
// change a registry (anything but GET and HEAD), for tests and benchmarks
// that must prove a decision only reads.
type WriteCounter struct {
	Next   http.RoundTripper
	writes atomic.Int64
}

// RoundTrip counts r when it can write, then sends it on Next (or
// http.DefaultTransport).
func (c *WriteCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		c.writes.Add(1)
	}
	next := c.Next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}

// Writes is the number of writing requests so far.
func (c *WriteCounter) Writes() int64 { return c.writes.Load() }
