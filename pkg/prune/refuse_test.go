package prune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/retention"
)

// TestARegistryThatRefusesDeletesIsNamedWithTheBytesToFree: a registry
// with deletes disabled answers 405 UNSUPPORTED (as docker-registry does
// without REGISTRY_STORAGE_DELETE_ENABLED); the prune stops at the first
// refusal, naming the registry and the bytes the plan would have freed,
// and the image with its artifacts is still there.
func TestARegistryThatRefusesDeletesIsNamedWithTheBytesToFree(t *testing.T) {
	ctx := context.Background()
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodDelete {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = w.Write([]byte(`{"errors":[{"code":"UNSUPPORTED","message":"The operation is unsupported."}]}`))
			return
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(s.Close)
	host := strings.TrimPrefix(s.URL, "http://")
	f := newFixtureAt(t, host)
	old := f.node(t, f.nodeInputs(t, "2"), nil)
	cfg := f.config(func(context.Context) (retention.Cluster, error) { return retention.Cluster{}, nil })
	p, err := MakePlan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Deletes()) != 1 || p.FreedBytes <= 0 {
		t.Fatalf("plan deletes %v freeing %d bytes, want %s", p.Deletes(), p.FreedBytes, old)
	}
	_, err = Apply(ctx, cfg, p)
	if !errors.Is(err, registry.ErrDeleteRefused) {
		t.Fatalf("Apply = %v, want ErrDeleteRefused", err)
	}
	for _, want := range []string{"registry " + host, fmt.Sprintf("%d bytes would have been freed", p.FreedBytes)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Apply error %q does not say %q", err, want)
		}
	}
	f.pullsAndVerifies(t, old, f.v)
}
