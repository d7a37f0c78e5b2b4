package catalog

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/types"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/remote/oci"
	"github.com/tektoncd/pipeline/pkg/resolution/resolver/bundle"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kiln-dev/kiln/pkg/pipeline"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

// TestBundleLayout checks each bundle against Tekton's bundle contract
// offline: one layer, the three dev.tekton.image.* annotations, a tar
// holding one file with the published YAML; and the same digest twice.
func TestBundleLayout(t *testing.T) {
	for _, r := range loadRepo(t) {
		t.Run(string(r.Kind)+"/"+r.Name, func(t *testing.T) {
			img, err := Bundle(r)
			if err != nil {
				t.Fatal(err)
			}
			m, err := img.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			if m.MediaType != types.OCIManifestSchema1 || len(m.Layers) != 1 {
				t.Fatalf("manifest %s with %d layers, want an OCI manifest with 1", m.MediaType, len(m.Layers))
			}
			want := map[string]string{oci.APIVersionAnnotation: "v1", oci.KindAnnotation: string(r.Kind), oci.TitleAnnotation: r.Name}
			for k, v := range want {
				if got := m.Layers[0].Annotations[k]; got != v {
					t.Errorf("layer annotation %s = %q, want %q", k, got, v)
				}
			}
			layers, err := img.Layers()
			if err != nil {
				t.Fatal(err)
			}
			rc, err := layers[0].Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			tr := tar.NewReader(rc)
			h, err := tr.Next()
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(tr)
			if h.Name != r.Name || !bytes.Equal(body, r.Raw) {
				t.Errorf("layer holds %s (%d bytes), want %s with the published YAML", h.Name, len(body), r.Name)
			}
			if _, err := tr.Next(); err != io.EOF {
				t.Errorf("layer holds more than one file")
			}
			again, _ := Bundle(r)
			d1, _ := img.Digest()
			d2, _ := again.Digest()
			if d1 != d2 {
				t.Errorf("two builds give %s and %s; the bundle is not reproducible", d1, d2)
			}
		})
	}
}

// TestBundlesResolveThroughTekton pushes every bundle to a real registry
// with basic auth and resolves each resource with Tekton's own bundle
// resolver code (bundle.GetEntry, what the bundles resolver runs, and the
// OCI resolver of pkg/remote/oci), with credentials from a Docker config
// as `make bundles` reads them. The resolved bytes must be the published
// YAML and decode to the same Task or Pipeline, valid for Tekton.
func TestBundlesResolveThroughTekton(t *testing.T) {
	ctx := context.Background()
	reg := env.StartRegistry(t, env.RegistryOptions{Users: map[string]string{"kiln": "bundle-pass"}})
	dockerConfig(t, reg.Host, "kiln", "bundle-pass")
	rs := loadRepo(t)
	repo := reg.Host + "/kiln/catalog"

	noAuth := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(noAuth, []byte(`{"auths":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := PushBundles(ctx, registry.Remote{AuthFile: noAuth}, repo, rs[:1]); err == nil || !strings.Contains(err.Error(), "pushing the bundle of") {
		t.Fatalf("push without credentials: %v, want an error naming the bundle", err)
	}
	// The zero Remote reads the Docker config, as `make bundles` does.
	pushed, err := PushBundles(ctx, registry.Remote{}, repo, rs)
	if err != nil {
		t.Fatal(err)
	}
	if len(pushed) != len(rs) {
		t.Fatalf("pushed %d bundles for %d resources", len(pushed), len(rs))
	}
	for _, p := range pushed {
		r := p.Resource
		t.Run(string(r.Kind)+"/"+r.Name, func(t *testing.T) {
			if want := fmt.Sprintf("%s/kiln-%s-%s:%s", repo, r.Kind, strings.TrimPrefix(r.Name, "kiln-"), r.Meta.Version); p.Ref != want {
				t.Errorf("pushed to %s, want %s", p.Ref, want)
			}
			for _, ref := range []string{p.Ref, strings.Split(p.Ref, ":"+r.Meta.Version)[0] + "@" + p.Digest} {
				res, err := bundle.GetEntry(ctx, authn.DefaultKeychain, bundle.RequestOptions{Bundle: ref, EntryName: r.Name, Kind: string(r.Kind)})
				if err != nil {
					t.Fatalf("resolving %s from %s: %v", r.Name, ref, err)
				}
				if !bytes.Equal(res.Data(), r.Raw) {
					t.Errorf("%s: resolved bytes differ from %s", ref, r.Source)
				}
				if got := "sha256:" + res.RefSource().Digest["sha256"]; got != p.Digest {
					t.Errorf("%s: resolver reports digest %s, pushed %s", ref, got, p.Digest)
				}
				if res.Annotations()[bundle.ResolverAnnotationKind] != string(r.Kind) || res.Annotations()[bundle.ResolverAnnotationName] != r.Name {
					t.Errorf("%s: resolver annotations %v", ref, res.Annotations())
				}
				sameResource(t, r, res.Data())
			}
			obj, _, err := oci.NewResolver(p.Ref, authn.DefaultKeychain).Get(ctx, string(r.Kind), r.Name)
			if err != nil {
				t.Fatalf("pkg/remote/oci: %v", err)
			}
			switch o := obj.(type) {
			case *tektonv1.Task:
				if r.Task == nil || o.Name != r.Name || len(o.Spec.Steps) != len(r.Task.Spec.Steps) {
					t.Errorf("pkg/remote/oci decoded Task %s, want %s", o.Name, r.Name)
				}
			case *tektonv1.Pipeline:
				if r.Pipeline == nil || o.Name != r.Name || len(o.Spec.Tasks) != len(r.Pipeline.Spec.Tasks) {
					t.Errorf("pkg/remote/oci decoded Pipeline %s, want %s", o.Name, r.Name)
				}
			default:
				t.Errorf("pkg/remote/oci decoded %T", obj)
			}
		})
	}

	// What a user gets wrong: a name or kind the bundle does not hold, and
	// no credentials.
	task := pushed[0]
	cases := []struct {
		name string
		kc   authn.Keychain
		opts bundle.RequestOptions
		want string
	}{
		{"unknown name", authn.DefaultKeychain, bundle.RequestOptions{Bundle: task.Ref, EntryName: "kiln-nope", Kind: "task"},
			"could not find object in image with kind: task and name: kiln-nope"},
		{"wrong kind", authn.DefaultKeychain, bundle.RequestOptions{Bundle: task.Ref, EntryName: task.Resource.Name, Kind: "pipeline"},
			"could not find object in image with kind: pipeline and name: " + task.Resource.Name},
		{"unknown tag", authn.DefaultKeychain, bundle.RequestOptions{Bundle: repo + "/kiln-task-nope:0.1", EntryName: "kiln-nope", Kind: "task"},
			"cannot retrieve the oci image"},
		{"no credentials", authn.NewMultiKeychain(), bundle.RequestOptions{Bundle: task.Ref, EntryName: task.Resource.Name, Kind: "task"},
			"UNAUTHORIZED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := bundle.GetEntry(ctx, c.kc, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// sameResource decodes resolved bytes with Tekton's defaulting and
// validation (pkg/pipeline's loaders) and compares them with the source.
func sameResource(t *testing.T, r *Resource, data []byte) {
	t.Helper()
	f := filepath.Join(t.TempDir(), r.Name+".yaml")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	switch r.Kind {
	case KindTask:
		got, err := pipeline.LoadTask(ctx, f)
		if err != nil {
			t.Fatalf("resolved Task: %v", err)
		}
		if !equality.Semantic.DeepEqual(got, r.Task) {
			t.Errorf("resolved Task %s differs from %s", got.Name, r.Source)
		}
	case KindPipeline:
		got, err := pipeline.LoadPipeline(ctx, f)
		if err != nil {
			t.Fatalf("resolved Pipeline: %v", err)
		}
		if !equality.Semantic.DeepEqual(got, r.Pipeline) {
			t.Errorf("resolved Pipeline %s differs from %s", got.Name, r.Source)
		}
	}
}

// dockerConfig points DOCKER_CONFIG at a config.json holding credentials
// for host, which authn.DefaultKeychain then uses (as `make bundles` does).
func dockerConfig(t *testing.T, host, user, pass string) {
	t.Helper()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
}
