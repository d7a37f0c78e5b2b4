package trigger

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiln-dev/kiln/pkg/payload"
)

// TestReleasePayloadsReadsAReleaseOnce: a release image read once is
// not read again (it is named by digest), concurrent reconciles share one
// read, and a failed read is retried only after the retry time.
func TestReleasePayloadsReadsAReleaseOnce(t *testing.T) {
	var c releasePayloads
	var reads atomic.Int32
	release := make(chan struct{})
	ok := func(context.Context) (payload.Facts, error) {
		reads.Add(1)
		<-release
		return payload.Facts{BaseOSImage: "os"}, nil
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if f, err := c.get(context.Background(), "rel@1", time.Hour, ok); err != nil || f.BaseOSImage != "os" {
				t.Errorf("get = %+v, %v", f, err)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if _, err := c.get(context.Background(), "rel@1", 0, ok); err != nil || reads.Load() != 1 {
		t.Fatalf("%d reads of one release (err %v), want 1", reads.Load(), err)
	}

	var fails atomic.Int32
	bad := func(context.Context) (payload.Facts, error) {
		fails.Add(1)
		return payload.Facts{}, errors.New("connection refused")
	}
	for range 3 {
		if _, err := c.get(context.Background(), "rel@2", time.Hour, bad); err == nil {
			t.Fatal("a failed read returned no error")
		}
	}
	if fails.Load() != 1 {
		t.Fatalf("%d reads of a failing release within the retry time, want 1", fails.Load())
	}
	if _, err := c.get(context.Background(), "rel@2", 0, bad); err == nil || fails.Load() != 2 {
		t.Fatalf("after the retry time: %d reads (err %v), want 2", fails.Load(), err)
	}
}
