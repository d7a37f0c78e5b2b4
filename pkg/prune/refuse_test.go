package prune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
	host := inProcessRegistry(t, true)
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

// inProcessRegistry is go-containerregistry's registry, which keeps a tag
// when the manifest it names is deleted by digest; with refuse it answers
// every DELETE as docker-registry with deletes disabled does.
func inProcessRegistry(t *testing.T, refuse bool) string {
	t.Helper()
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if refuse && req.Method == http.MethodDelete {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = w.Write([]byte(`{"errors":[{"code":"UNSUPPORTED","message":"The operation is unsupported."}]}`))
			return
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// TestAFingerprintTagTheRegistryKeptIsDeletedToo: on a registry that does
// not untag on a delete by digest, the prune deletes the kiln- tag itself,
// and the artifacts; only the kept image's tags remain.
func TestAFingerprintTagTheRegistryKeptIsDeletedToo(t *testing.T) {
	ctx := context.Background()
	f := newFixtureAt(t, inProcessRegistry(t, false))
	kept := f.node(t, f.nodeInputs(t, "1"), nil)
	f.node(t, f.nodeInputs(t, "2"), nil)
	cfg := f.config(func(context.Context) (retention.Cluster, error) {
		return retention.Cluster{Live: []string{kept}}, nil
	})
	p, err := MakePlan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, cfg, p); err != nil {
		t.Fatal(err)
	}
	want := append([]string{tagOf(t, p, kept)}, artifactTags(kept)...)
	slices.Sort(want)
	if d := cmp.Diff(want, f.tags(t)); d != "" {
		t.Errorf("tags after the prune (-want +got):\n%s", d)
	}
}

// TestARepositoryTheRegistryDoesNotKnowHasNothingToPrune: before kiln's
// first build its repository does not exist (the registry answers
// NAME_UNKNOWN); the plan is empty and says so, not a failure, and a
// registry that does not answer still fails the plan.
func TestARepositoryTheRegistryDoesNotKnowHasNothingToPrune(t *testing.T) {
	ctx := context.Background()
	host := inProcessRegistry(t, false)
	f := newFixtureAt(t, host)
	cfg := f.config(func(context.Context) (retention.Cluster, error) { return retention.Cluster{}, nil })
	cfg.Repos = []string{host + "/kiln/never-pushed"}
	var log strings.Builder
	cfg.Log = &log
	p, err := MakePlan(ctx, cfg)
	if err != nil {
		t.Fatalf("MakePlan on an unknown repository = %v, want an empty plan", err)
	}
	if len(p.Decisions) != 0 || len(p.Orphans) != 0 || p.FreedBytes != 0 {
		t.Errorf("plan = %d decisions, %d orphans, %d bytes; want nothing", len(p.Decisions), len(p.Orphans), p.FreedBytes)
	}
	if want := "repository " + host + "/kiln/never-pushed: not known to the registry, nothing to prune there"; !strings.Contains(log.String(), want) {
		t.Errorf("log %q does not say %q", log.String(), want)
	}
	cfg.Repos = []string{"127.0.0.1:1/kiln/os"}
	if _, err := MakePlan(ctx, cfg); err == nil || errors.Is(err, registry.ErrNotFound) {
		t.Errorf("MakePlan against a stopped registry = %v, want a failure that is not not-found", err)
	}
}
