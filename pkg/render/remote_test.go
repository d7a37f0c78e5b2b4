package render

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/mcrender"
)

// trickle serves a body that never ends: one byte every interval, each
// flushed, so no single read ever waits long; it stops when the client
// goes away.
func trickle(t *testing.T, interval time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-req.Context().Done():
				return
			case <-time.After(interval):
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRenderEndsTricklingSourcesAtTheirDeadlines renders configs whose
// sources a server trickles a byte at a time, each attempt's timeout far
// away: one source ends at the per-source deadline, several sources end
// together at the render's deadline, and each error names the URL and the
// deadline that passed.
func TestRenderEndsTricklingSourcesAtTheirDeadlines(t *testing.T) {
	srv := trickle(t, 50*time.Millisecond)
	file := func(i int) string {
		return fmt.Sprintf(`{"path":"/etc/kiln/slow%d","mode":420,"contents":{"source":"%s/slow%d"}}`, i, srv.URL, i)
	}
	tests := []struct {
		name    string
		files   int
		fetcher Fetcher
		within  time.Duration
		want    []string
	}{
		{"one source", 1, Fetcher{Timeout: time.Minute, SourceDeadline: 500 * time.Millisecond, Attempts: 3},
			2 * time.Second, []string{srv.URL + "/slow0", "the deadline for one source (500ms) passed"}},
		{"three sources", 3, Fetcher{Timeout: time.Minute, SourceDeadline: time.Minute, RenderDeadline: 700 * time.Millisecond, Attempts: 3},
			2 * time.Second, []string{srv.URL + "/slow0", "render's deadline for all remote sources (700ms) passed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fs []string
			for i := 0; i < tc.files; i++ {
				fs = append(fs, file(i))
			}
			raw := `{"ignition":{"version":"3.5.0"},"storage":{"files":[` + strings.Join(fs, ",") + `]}}`
			start := time.Now()
			res, err := mcrender.Render(context.Background(), mcrender.Request{Pool: workerPool(), Configs: []*mcfgv1.MachineConfig{workerMC("50-attack", raw)}, Sources: &tc.fetcher})
			if took := time.Since(start); took > tc.within {
				t.Errorf("render took %s, want at most %s", took, tc.within)
			}
			wantRefused(t, res, err, append([]string{"spec.config.storage.files[0] (/etc/kiln/slow0) contents"}, tc.want...)...)
		})
	}
}
