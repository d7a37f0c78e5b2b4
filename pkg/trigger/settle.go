package trigger

import (
	"sync"
	"time"
)

// settler coalesces bursts: a key is ready once no input changed for
// quiet, or once max passed since the first change of the burst (so a
// steady stream of edits cannot starve a pool). It lives in memory: after
// a restart every key is ready at once, and decide's live list of the
// pool's runs by fingerprint keeps that from duplicating runs.
type settler struct {
	quiet, max time.Duration
	now        func() time.Time

	mu          sync.Mutex
	first, last map[string]time.Time
}

func newSettler(quiet, max time.Duration, now func() time.Time) *settler {
	if now == nil {
		now = time.Now
	}
	return &settler{quiet: quiet, max: max, now: now, first: map[string]time.Time{}, last: map[string]time.Time{}}
}

// touch records a change of key's inputs.
func (s *settler) touch(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.now()
	if _, ok := s.first[key]; !ok {
		s.first[key] = t
	}
	s.last[key] = t
}

// wait returns how long key must still wait; zero means go, and ends the
// burst.
func (s *settler) wait(key string) time.Duration { return s.waitQuiet(key, s.quiet) }

// waitQuiet is wait with a quiet window of its own: a key whose change is
// often the first of several separate writes waits longer than a pool.
func (s *settler) waitQuiet(key string, quiet time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, ok := s.last[key]
	if !ok {
		return 0
	}
	t := s.now()
	w := quiet - t.Sub(last)
	if cap := s.max - t.Sub(s.first[key]); cap < w {
		w = cap
	}
	if w <= 0 {
		delete(s.first, key)
		delete(s.last, key)
		return 0
	}
	return w
}
