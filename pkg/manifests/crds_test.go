package manifests_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kiln-dev/kiln/test/env"
)

// TestEmbeddedCRDsAreTheReleasedOnes: every CRD the folder reader
// validates with is byte for byte the one published where it comes from:
// kiln's in config/crd (hack/generate.sh copies them), OpenShift's in
// github.com/openshift/api's zz_generated.crd-manifests at the version in
// go.mod. A bump of either shows here until the copy is refreshed.
func TestEmbeddedCRDsAreTheReleasedOnes(t *testing.T) {
	api, err := env.ModuleDir("github.com/openshift/api")
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := filepath.Glob("crds/*.yaml")
	if err != nil || len(embedded) < 13 {
		t.Fatalf("embedded CRDs %v, %v: want the 13 kiln reads", embedded, err)
	}
	for _, p := range embedded {
		base := filepath.Base(p)
		sources, _ := filepath.Glob(filepath.Join(api, "*", "*", "zz_generated.crd-manifests", base))
		sources = append(sources, filepath.Join(env.RepoRoot(), "config", "crd", base))
		var found bool
		for _, src := range sources {
			want, err := os.ReadFile(src)
			if err != nil {
				continue
			}
			found = true
			got, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s: copy it again", p, src)
			}
		}
		if !found {
			t.Errorf("%s: no source in config/crd or in %s", p, api)
		}
	}
}
