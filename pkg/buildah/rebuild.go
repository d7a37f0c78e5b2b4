package buildah

import (
	"context"
	"os"
	"sort"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"

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
