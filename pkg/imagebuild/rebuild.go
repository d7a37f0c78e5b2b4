package imagebuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/registry"
)

// Rebuild builds what Build (builder "fast") or BuildWithBuildah (builder
// "buildah") would build for in, with no reuse lookup and no push. work is
// a folder the caller owns (storage, OCI layout go under it; the caller
// removes it after it is done reading Image). For buildah, bb's storage is
// a fresh one under work, whatever bb.Root was (with the overlay driver,
// work must be on a file system overlay can use, e.g. a volume rather than
// a container's own root). The registry is only read: the base by digest,
// and for buildah the images its Containerfile pulls.
func Rebuild(ctx context.Context, r registry.Remote, bb buildah.Buildah, in BuildahInput, builder, work string) (*buildah.Rebuilt, error) {
	switch builder {
	case "fast":
		if in.ExtensionsImage != "" || in.Containerfile != "" {
			// Build ignores both; a record naming them was not a fast build.
			return nil, fmt.Errorf("rebuilding %s: builder fast has no extensions image or Containerfile", in.Repository)
		}
		f, err := in.prepareFast(ctx, r)
		if err != nil {
			return nil, err
		}
		a, err := f.assemble()
		if err != nil {
			return nil, err
		}
		return &buildah.Rebuilt{Digest: a.digest, Image: a.image, Index: a.index, Inputs: f.res.Inputs}, nil
	case "buildah":
		return rebuildBuildah(ctx, r, bb, in, work)
	}
	return nil, fmt.Errorf("rebuilding %s: builder %q, want fast or buildah", in.Repository, builder)
}

// rebuildBuildah runs the buildah path in fresh storage under work and
// keeps the result in an OCI layout there.
func rebuildBuildah(ctx context.Context, r registry.Remote, bb buildah.Buildah, in BuildahInput, work string) (*buildah.Rebuilt, error) {
	p, err := in.prepareBuildah(ctx, r)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(work, "context")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	b, err := p.bud(dir, p.repo.Tag(p.res.Tag).String())
	if err != nil {
		return nil, err
	}
	bb, done := bb.FreshStorage(filepath.Join(work, "buildah"))
	defer done()
	out, err := bb.BudLocal(ctx, r, b, work)
	if err != nil {
		return nil, fmt.Errorf("rebuilding %s on %s: %w", in.Rendered.Name, in.Base, err)
	}
	out.Inputs = p.res.Inputs
	return out, nil
}
