package trigger

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kiln-dev/kiln/pkg/payload"
)

// apiCounter counts the requests a rest.Config's clients send, by verb
// and resource ("LIST pipelineruns", "POST events"). Watches are left
// out: an informer's watch is one long request, not a round trip per
// edit.
type apiCounter struct {
	mu    sync.Mutex
	by    map[string]int
	total atomic.Int64
}

func (a *apiCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			a.count(r)
			return rt.RoundTrip(r)
		})
	}
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (a *apiCounter) count(r *http.Request) {
	if r.URL.Query().Get("watch") == "true" {
		return
	}
	k := requestKind(r)
	a.mu.Lock()
	if a.by == nil {
		a.by = map[string]int{}
	}
	a.by[k]++
	a.mu.Unlock()
	a.total.Add(1)
}

// requestKind is a request's verb and resource: the path segment after
// the API version, and the namespace's, when there is one
// (/api/v1/namespaces/kiln/configmaps/x is configmaps). A GET without a
// name is a LIST.
func requestKind(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /api/v1/... or /apis/group/version/...
	rest := parts
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	}
	if len(rest) >= 2 && rest[0] == "namespaces" && len(rest) > 2 {
		rest = rest[2:]
	}
	verb := r.Method
	resource := strings.Join(rest, "/")
	if len(rest) > 0 {
		resource = rest[0]
		if len(rest) > 2 {
			resource += "/" + rest[2] // a subresource
		}
	}
	if verb == http.MethodGet && len(rest) == 1 {
		verb = "LIST"
	}
	return verb + " " + resource
}

// reset zeroes the counts.
func (a *apiCounter) reset() {
	a.mu.Lock()
	a.by = map[string]int{}
	a.total.Store(0)
	a.mu.Unlock()
}

// of is the count of one kind of request.
func (a *apiCounter) of(kind string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.by[kind]
}

// breakdown lists the counts, most first.
func (a *apiCounter) breakdown() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for k, n := range a.by {
		out = append(out, fmt.Sprintf("%4d %s", n, k))
	}
	slices.Sort(out)
	slices.Reverse(out)
	return out
}

// quiet waits until no request was counted for d (the trigger is idle:
// the edits' reconciles and their events are all sent).
func (a *apiCounter) quiet(t testing.TB, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	last := a.total.Load()
	for {
		time.Sleep(d)
		n := a.total.Load()
		if n == last {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the trigger did not go idle: %d requests in the last %s", n-last, d)
		}
		last = n
	}
}

// startCounted starts the trigger as h.start does, its API requests
// counted by a.
func (h *harness) startCounted(a *apiCounter, settle time.Duration) {
	h.t.Helper()
	mgr, err := NewManager(a.wrap(h.kube.Config), Options{Namespace: ns, MetricsAddr: "0", ProbeAddr: "0", Settle: settle, MaxSettle: 10 * settle})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			h.t.Errorf("trigger manager: %v", err)
		}
	}()
	h.t.Cleanup(func() { cancel(); <-done })
}

// TestEditAPIRequestsPerEdit: with upgrade-ahead active (the
// ClusterVersion offers an update) and the payload's boot image stream
// present, as on every cluster, an MC edit costs the trigger at most
// maxRequestsPerEdit API requests in all (its reconciles, the run events'
// reconciles, the status ConfigMap and its Events), counted on its
// transport from the edit until it is idle again, and at most one list of
// PipelineRuns from the apiserver. What an edit needs is 9: cancel and
// create the pool's run and its upgrade-ahead run, one status line, and
// an Event for each of the four; the slack is for a list when the cache
// is a watch event behind the trigger's own writes.
func TestEditAPIRequestsPerEdit(t *testing.T) {
	const maxRequestsPerEdit, maxRunListsPerEdit = 11, 1
	h := newHarness(t)
	h.offerUpdates(h.offered("4.18.3"))
	h.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: BootImagesConfigMap, Namespace: payload.Namespace},
		Data: map[string]string{"stream": `{"stream":"rhcos-4.18"}`}})
	pools := []string{"pool0", "pool1", "pool2"}
	for _, p := range pools {
		h.create(pool(p, true), machineConfig("50-"+p, p, "own=0"))
	}
	var a apiCounter
	h.startCounted(&a, 0)
	for _, p := range pools {
		eventually(t, wait, "the first run and upgrade-ahead run of "+p, func() bool { return len(h.runs(p)) == 2 })
	}
	a.quiet(t, 2*time.Second)
	a.reset()
	const rounds = 2
	for i := range rounds {
		for _, p := range pools {
			before := len(h.runs(p))
			h.setKarg("50-"+p, fmt.Sprintf("own=%d", i+1))
			eventually(t, wait, "a new run and upgrade-ahead run of "+p, func() bool { return len(h.runs(p)) == before+2 })
		}
	}
	a.quiet(t, 2*time.Second)
	edits := rounds * len(pools)
	perEdit := float64(a.total.Load()) / float64(edits)
	t.Logf("%.1f API requests per edit; over %d edits:\n%s", perEdit, edits, strings.Join(a.breakdown(), "\n"))
	if perEdit > maxRequestsPerEdit {
		t.Errorf("%.1f API requests per edit, want at most %d", perEdit, maxRequestsPerEdit)
	}
	if lists := float64(a.of("LIST pipelineruns")) / float64(edits); lists > maxRunListsPerEdit {
		t.Errorf("%.1f PipelineRun lists from the apiserver per edit, want at most %d", lists, maxRunListsPerEdit)
	}
}
