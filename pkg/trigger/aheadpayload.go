package trigger

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kiln-dev/kiln/pkg/payload"
)

// An upgrade-ahead run builds on its target release's images, not the
// running release's: the trigger reads them from the release image
// (payload.ReleaseFacts, through the cluster's mirrors) and hands them to
// the run. A release image is named by digest, so what it names never
// changes: a read that succeeded is kept for the life of the process,
// and every pool's reconcile after the first costs no registry call. A
// failed read is kept for aheadRetry, so that a release that cannot be
// read does not cost a registry round trip on every edit of every pool;
// the pool is reconciled again after it.

// aheadPayloadTimeout bounds one read of a release image.
const aheadPayloadTimeout = 2 * time.Minute

// maxReleasePayloads bounds the releases remembered; a cluster is offered
// a handful at a time.
const maxReleasePayloads = 64

type releasePayload struct {
	done  chan struct{} // closed when facts and err are set
	facts payload.Facts
	err   error
	at    time.Time
}

// releasePayloads remembers the facts read per release image.
type releasePayloads struct {
	mu sync.Mutex
	m  map[string]*releasePayload
}

// get returns the facts of release image ref, reading them with read
// when they are not known, or when the last read failed at least retry
// ago. Concurrent reconciles of several pools wait for one read.
func (c *releasePayloads) get(ctx context.Context, ref string, retry time.Duration, read func(context.Context) (payload.Facts, error)) (payload.Facts, error) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]*releasePayload{}
	}
	e := c.m[ref]
	if e != nil && finished(e) && e.err != nil && time.Since(e.at) >= retry {
		e = nil
	}
	if e == nil {
		c.evict()
		e = &releasePayload{done: make(chan struct{})}
		c.m[ref] = e
		c.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, aheadPayloadTimeout)
		e.facts, e.err = read(rctx)
		cancel()
		e.at = time.Now()
		close(e.done)
		return e.facts, e.err
	}
	c.mu.Unlock()
	select {
	case <-e.done:
		return e.facts, e.err
	case <-ctx.Done():
		return payload.Facts{}, ctx.Err()
	}
}

func finished(e *releasePayload) bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// evict makes room for one more entry: failures first, then any
// finished entry (c.mu held).
func (c *releasePayloads) evict() {
	if len(c.m) < maxReleasePayloads {
		return
	}
	for _, failedOnly := range []bool{true, false} {
		for k, e := range c.m {
			if finished(e) && (e.err != nil || !failedOnly) {
				delete(c.m, k)
				if len(c.m) < maxReleasePayloads {
					return
				}
			}
		}
	}
}

// targetPayload reads release t's base OS, extensions and driver-toolkit
// images through the cluster's mirrors and the trigger's credentials.
func (c *Controller) targetPayload(ctx context.Context, t payload.Target) (payload.Facts, error) {
	return c.payloads.get(ctx, t.Image, c.registriesRetry(), func(ctx context.Context) (payload.Facts, error) {
		r, err := c.Remote(ctx)
		if err != nil {
			return payload.Facts{}, fmt.Errorf("reading release %s: %w", t.Version, err)
		}
		return payload.ReleaseFacts(ctx, t.Version, t.Image, r)
	})
}

// retryAhead is what syncAhead returns when a target's payload could not
// be read: the pool's own runs are done, and the pool is reconciled again
// after the given time to retry the read.
type retryAhead struct{ after time.Duration }

func (r *retryAhead) Error() string {
	return fmt.Sprintf("an upgrade target's payload could not be read; retrying in %s", r.after)
}
