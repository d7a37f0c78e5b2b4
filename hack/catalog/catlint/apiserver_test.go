package catlint

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/test/env"
)

// TestTestsAcceptedByAPIServer creates every catalog resource and every
// document of its tests/ folder (after the hook) on a real apiserver with
// Tekton's CRDs, as the e2e's runner creates them: the files are what the
// cluster accepts, not only what Tekton's Go validation accepts. Nothing
// runs (no Tekton controller); make e2e runs them.
func TestTestsAcceptedByAPIServer(t *testing.T) {
	ctx := context.Background()
	k := env.StartKube(t)
	const ns = "kiln"
	if err := k.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repoRoot, "catalog")
	for _, r := range loadCatalog(t, dir) {
		raw, _, err := Decoder().Decode(mustRead(t, filepath.Join(dir, filepath.FromSlash(r.Rel))), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		create(ctx, t, k.Client, raw.(client.Object), ns, r.Rel)
		files, err := PrepareTests(ctx, filepath.Join(dir, filepath.FromSlash(path.Dir(r.Rel)), "tests"), fakeEnv())
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			for _, d := range f.Docs {
				obj, _, err := Decoder().Decode(d.Raw, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				create(ctx, t, k.Client, obj.(client.Object), ns, path.Dir(r.Rel)+"/tests/"+f.Name)
			}
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func create(ctx context.Context, t *testing.T, c client.Client, o client.Object, ns, what string) {
	t.Helper()
	o.SetNamespace(ns)
	if err := c.Create(ctx, o); err != nil {
		t.Errorf("%s: the apiserver refuses %T %s: %v", what, o, o.GetName()+o.GetGenerateName(), err)
	}
}
