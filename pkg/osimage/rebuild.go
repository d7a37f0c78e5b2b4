package osimage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// Rebuilt is an image rebuilt from recorded inputs; nothing was pushed.
type Rebuilt struct {
	// Digest is the manifest (or index) digest, as the registry push
	// would have had it.
	Digest v1.Hash
	// Image is the single-platform result (nil when Index is set).
	Image v1.Image
	// Index is the fast path's result on a multi-platform base.
	Index v1.ImageIndex
	// Inputs are the inputs this kiln computes for the rebuild; the caller
	// compares them with the attested ones.
	Inputs trust.Inputs
}

// Rebuild builds what Build (builder "fast") or BuildWithBuildah (builder
// "buildah") would build for in, with no reuse lookup and no push. work is
// a folder the caller owns (storage, OCI layout go under it; the caller
// removes it after it is done reading Image). For buildah, bb's storage is
// a fresh one under work, whatever bb.Root was (with the overlay driver,
// work must be on a file system overlay can use, e.g. a volume rather than
// a container's own root). The registry is only read: the base by digest,
// and for buildah the images its Containerfile pulls.
func Rebuild(ctx context.Context, r registry.Remote, bb Buildah, in BuildahInput, builder, work string) (*Rebuilt, error) {
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
		return &Rebuilt{Digest: a.digest, Image: a.image, Index: a.index, Inputs: f.res.Inputs}, nil
	case "buildah":
		return rebuildBuildah(ctx, r, bb, in, work)
	}
	return nil, fmt.Errorf("rebuilding %s: builder %q, want fast or buildah", in.Repository, builder)
}

// rebuildBuildah runs the buildah path in fresh storage under work and
// keeps the result in an OCI layout there.
func rebuildBuildah(ctx context.Context, r registry.Remote, bb Buildah, in BuildahInput, work string) (*Rebuilt, error) {
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

// FreshStorage returns bb with its storage in dir (Root), which must not
// hold one yet, and a function that empties and removes it again: a
// rebuild shares nothing with the storage of the build it checks.
func (bb Buildah) FreshStorage(dir string) (Buildah, func()) {
	bb.Root = dir
	return bb, bb.removeStorage
}

// removeStorage empties and removes a storage made for one rebuild (Root
// set). The overlay driver may leave its home bind-mounted; those mounts
// are detached before the folder is removed.
func (bb Buildah) removeStorage() {
	if bb.Root == "" {
		return
	}
	ctx := context.Background()
	_, _ = bb.run(ctx, "rm", "--all")
	_, _ = bb.run(ctx, "rmi", "--all", "--force")
	for _, m := range mountsUnder(bb.Root) {
		_ = syscall.Unmount(m, syscall.MNT_DETACH)
	}
	_ = os.RemoveAll(bb.Root)
}

// mountsUnder lists the mount points below root, deepest first.
func mountsUnder(root string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var mounts []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], root+"/") {
			mounts = append(mounts, f[4])
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	return mounts
}
