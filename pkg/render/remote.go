package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Fetcher fetches remote sources for snapshots. MCO leaves remote
// sources in the rendered config and lets Ignition fetch them at first boot;
// kiln embeds them so every node gets the same bytes, also on day 2.
type Fetcher struct {
	// Client is the HTTP client; nil means a plain one.
	Client *http.Client
	// Timeout bounds one attempt (default 30s).
	Timeout time.Duration
	// SourceDeadline bounds one source, all its attempts and waits
	// between them together (default 60s): a server that trickles a byte
	// at a time within each attempt's Timeout cannot hold render for
	// Attempts times Timeout.
	SourceDeadline time.Duration
	// RenderDeadline bounds all of one render's fetches together
	// (default 5m), whatever the number of sources.
	RenderDeadline time.Duration
	// MaxBytes caps one source as fetched, before decompression (default
	// 16 MiB; the rendered config is capped at 1.5 MiB anyway). What a
	// source inflates to is capped by ignres.MaxReferencedConfig and
	// ignres.MaxContent.
	MaxBytes int64
	// Attempts is the number of tries for errors worth retrying: network
	// errors, timeouts, 429 and 5xx (default 3).
	Attempts int
	// Backoff is the wait before the second attempt; it doubles (default 500ms).
	Backoff time.Duration
}

// Defaults of the deadlines of remote sources. A source's leaves room for
// the attempts of a server that answers, not for one trickling bytes.
const (
	DefaultFetchSourceDeadline = 60 * time.Second
	DefaultFetchDeadline       = 5 * time.Minute
)

func (f *Fetcher) withDefaults() Fetcher {
	out := *f
	if out.Client == nil {
		out.Client = &http.Client{}
	}
	if out.Timeout <= 0 {
		out.Timeout = 30 * time.Second
	}
	if out.SourceDeadline <= 0 {
		out.SourceDeadline = DefaultFetchSourceDeadline
	}
	if out.RenderDeadline <= 0 {
		out.RenderDeadline = DefaultFetchDeadline
	}
	if out.MaxBytes <= 0 {
		out.MaxBytes = 16 << 20
	}
	if out.Attempts <= 0 {
		out.Attempts = 3
	}
	if out.Backoff <= 0 {
		out.Backoff = 500 * time.Millisecond
	}
	return out
}

// permanentError is a failure a retry cannot fix.
type permanentError struct{ error }

// renderContext bounds one render's fetches by RenderDeadline; an error
// past it says which deadline passed.
func (f *Fetcher) renderContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := f.withDefaults().RenderDeadline
	return context.WithTimeoutCause(ctx, d, fmt.Errorf("render's deadline for all remote sources (%s) passed", d))
}

// Fetch returns the body at u, retrying transient failures, within
// SourceDeadline.
func (f *Fetcher) Fetch(ctx context.Context, u string, headers http.Header) ([]byte, error) {
	ff := f.withDefaults()
	ctx, cancel := context.WithTimeoutCause(ctx, ff.SourceDeadline, fmt.Errorf("the deadline for one source (%s) passed", ff.SourceDeadline))
	defer cancel()
	body, err := ff.fetch(ctx, u, headers)
	if err != nil && ctx.Err() != nil {
		// Whatever the attempt said, the source ran out of time: say
		// which deadline.
		return nil, context.Cause(ctx)
	}
	return body, err
}

// fetch tries up to Attempts times, waiting Backoff and then twice as
// long each time; a permanent error or ctx's end stops it early.
func (ff Fetcher) fetch(ctx context.Context, u string, headers http.Header) ([]byte, error) {
	var body []byte
	var err error
	b := wait.Backoff{Duration: ff.Backoff, Factor: 2, Steps: ff.Attempts}
	werr := wait.ExponentialBackoffWithContext(ctx, b, func(ctx context.Context) (bool, error) {
		body, err = ff.once(ctx, u, headers)
		if errors.As(err, new(permanentError)) {
			return false, err
		}
		return err == nil, nil
	})
	switch {
	case werr == nil:
		return body, nil
	case errors.As(err, new(permanentError)):
		return nil, err
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	}
	return nil, fmt.Errorf("%w (after %d attempts)", err, ff.Attempts)
}

func (f Fetcher) once(ctx context.Context, u string, headers http.Header) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, f.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, permanentError{err}
	}
	for k, vs := range headers {
		req.Header[k] = vs
	}
	resp, err := f.Client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("timed out after %s", f.Timeout)
		}
		return nil, fmt.Errorf("request failed: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("HTTP %s", resp.Status)
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			return nil, err
		}
		return nil, permanentError{err}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.MaxBytes+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("timed out after %s", f.Timeout)
		}
		return nil, fmt.Errorf("reading body: %w", err)
	}
	if int64(len(body)) > f.MaxBytes {
		return nil, permanentError{fmt.Errorf("larger than the %d-byte limit", f.MaxBytes)}
	}
	return body, nil
}

// redact hides a password in a URL's user info: errors and logs name the
// source but never its credentials.
func redact(src string) string {
	u, err := url.Parse(src)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

func isRemote(src string) bool {
	return strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://")
}
