package render

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestFetchRetries: a transient failure (503) is tried Attempts times and
// the error says so; a permanent one (404) once; a success after a
// failure returns the body.
func TestFetchRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses []int // per request; the last repeats
		wantHits int64
		wantErr  string
		wantBody string
		attempts int
	}{
		{name: "503 every time", statuses: []int{503}, attempts: 3, wantHits: 3, wantErr: "(after 3 attempts)"},
		{name: "404 is not retried", statuses: []int{404}, attempts: 3, wantHits: 1, wantErr: "404"},
		{name: "503 then 200", statuses: []int{503, 200}, attempts: 3, wantHits: 2, wantBody: "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				n := int(hits.Add(1))
				w.WriteHeader(tc.statuses[min(n, len(tc.statuses))-1])
				_, _ = w.Write([]byte("ok"))
			}))
			defer srv.Close()
			f := &Fetcher{Attempts: tc.attempts, Backoff: time.Millisecond, Timeout: 5 * time.Second, Client: srv.Client()}
			body, err := f.Fetch(context.Background(), srv.URL, nil)
			if got := hits.Load(); got != tc.wantHits {
				t.Errorf("%d requests, want %d", got, tc.wantHits)
			}
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Fetch = %v, want an error with %q", err, tc.wantErr)
			case tc.wantErr == "" && (err != nil || string(body) != tc.wantBody):
				t.Errorf("Fetch = %q, %v; want %q", body, err, tc.wantBody)
			}
		})
	}
}
