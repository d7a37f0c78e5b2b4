package catalog

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/tektoncd/pipeline/pkg/remote/oci"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// BundleRef is where `make bundles` pushes r:
// <registry>/kiln-<kind>-<name without kiln->:<version>. One bundle per
// resource and version, as tektoncd/catalog publishes (see catalog/README).
func BundleRef(registry string, r *Resource) string {
	return fmt.Sprintf("%s/kiln-%s-%s:%s", strings.TrimSuffix(registry, "/"), r.Kind, strings.TrimPrefix(r.Name, "kiln-"), r.Meta.Version)
}

// Bundle builds r's Tekton bundle as Tekton's bundle contract (pkg/remote/oci,
// pkg/resolution/resolver/bundle) reads it: one layer per resource, a tar
// holding one file (the resource's YAML, as published in the catalog),
// annotated with dev.tekton.image.apiVersion, .kind (lower-case, singular)
// and .name. Nothing in it depends on the time, so the digest is a function
// of the source.
func Bundle(r *Resource) (v1.Image, error) {
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	if err := tw.WriteHeader(&tar.Header{Name: r.Name, Mode: 0o600, Size: int64(len(r.Raw)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return nil, fmt.Errorf("building the bundle of %s %s: %w", r.Kind.Title(), r.Name, err)
	}
	if _, err := tw.Write(r.Raw); err != nil {
		return nil, fmt.Errorf("building the bundle of %s %s: %w", r.Kind.Title(), r.Name, err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("building the bundle of %s %s: %w", r.Kind.Title(), r.Name, err)
	}
	data := tb.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("building the bundle of %s %s: %w", r.Kind.Title(), r.Name, err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		Annotations: map[string]string{
			oci.APIVersionAnnotation: "v1",
			oci.KindAnnotation:       string(r.Kind),
			oci.TitleAnnotation:      r.Name,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("building the bundle of %s %s: %w", r.Kind.Title(), r.Name, err)
	}
	// Standard OCI annotations, so registries and `crane manifest` show
	// what the bundle is and where it comes from.
	return mutate.Annotations(img, map[string]string{
		"org.opencontainers.image.title":       r.Name,
		"org.opencontainers.image.version":     r.Meta.Version,
		"org.opencontainers.image.description": r.Meta.DisplayName,
		"org.opencontainers.image.source":      RepoURL,
		"org.opencontainers.image.url":         RepoURL + "/tree/main/catalog/" + r.Dir(),
	}).(v1.Image), nil
}

// Pushed is one bundle written to a registry.
type Pushed struct {
	Resource *Resource
	Ref      string // as pushed, by tag
	Digest   string // sha256:…, to pin with <repo>@<digest>
}

// PushBundles builds and pushes one bundle per resource under repo
// (host[:port]/path) with r (credentials, transport). It stops at the first
// failure and says which resource and reference failed; bundles already
// pushed stay (each is complete on its own: a tag points at a whole image
// or at nothing new).
func PushBundles(ctx context.Context, r registry.Remote, repo string, rs []*Resource) ([]Pushed, error) {
	if repo == "" {
		return nil, fmt.Errorf("pushing bundles: no registry given (BUNDLE_REGISTRY=host/path)")
	}
	var out []Pushed
	for _, res := range rs {
		refStr := BundleRef(repo, res)
		ref, err := r.ParseRef(refStr)
		if err != nil {
			return out, fmt.Errorf("pushing the bundle of %s %s: reference %q: %w", res.Kind.Title(), res.Name, refStr, err)
		}
		img, err := Bundle(res)
		if err != nil {
			return out, err
		}
		if err := r.Write(ctx, ref, img); err != nil {
			return out, fmt.Errorf("pushing the bundle of %s %s to %s: %w", res.Kind.Title(), res.Name, refStr, err)
		}
		d, err := img.Digest()
		if err != nil {
			return out, fmt.Errorf("pushing the bundle of %s %s: %w", res.Kind.Title(), res.Name, err)
		}
		out = append(out, Pushed{Resource: res, Ref: refStr, Digest: d.String()})
	}
	return out, nil
}
