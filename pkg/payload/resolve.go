package payload

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// Resolve returns ref pinned by digest (repo@sha256:…), read through r's
// mirrors as the nodes would pull it; the result keeps ref's own name. A
// reference that already has a digest is returned as given without
// contacting the registry. Render never calls this (it records references
// as given); the image stages do.
func Resolve(ctx context.Context, ref string, r registry.Remote) (string, error) {
	parsed, err := r.ParseRef(ref)
	if err != nil {
		return "", fmt.Errorf("resolving image %q: %w", ref, err)
	}
	if d, ok := parsed.(name.Digest); ok {
		return d.String(), nil
	}
	desc, err := r.Head(ctx, parsed)
	if err != nil {
		return "", fmt.Errorf("resolving image %q: %w", ref, err)
	}
	return parsed.Context().Digest(desc.Digest.String()).String(), nil
}
