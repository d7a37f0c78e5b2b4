package kmodbuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// RebuildUnsigned rebuilds kmod-build's unsigned image from its attested
// Inputs (BuildType trust.BuildTypeKmodBuild): the recorded Dockerfile and
// build arguments, FROM the recorded OS and driver-toolkit digests, in
// fresh buildah storage under work, without pushing. secretsDir holds the
// build secrets when the inputs name secrets, laid out as SecretFiles
// reads them (a folder per Secret, or a file per <secret>_<key> id); their
// content is no input kiln records, so the caller must supply the same. The returned Inputs are
// computed again, with the kernel version checked against the OS image
// and the driver toolkit.
func RebuildUnsigned(ctx context.Context, r registry.Remote, bb buildah.Buildah, in trust.Inputs, secretsDir, work string) (*buildah.Rebuilt, error) {
	k, err := trust.KmodBuildOf(in)
	if err != nil {
		return nil, fmt.Errorf("rebuilding the kmod image: %w", err)
	}
	ks, err := ReadPayloadKernels(ctx, r, k.OSImage, k.DTKImage)
	if err != nil {
		return nil, fmt.Errorf("rebuilding %s: %w", k.Target, err)
	}
	// The inputs name the kernel of the pool's kernelType; it must be one
	// the recorded OS image and driver toolkit offer.
	if !ks.Has(k.KernelVersion) {
		return nil, fmt.Errorf("rebuilding %s: OS image %s has kernel %s (variants %s, %s), the inputs name %s", k.Target, k.OSImage,
			ks[KernelTypeDefault], ks[KernelTypeRealtime], ks[KernelType64kPages], k.KernelVersion)
	}
	kver := k.KernelVersion
	secrets, err := SecretFiles(secretsDir, k.Secrets)
	if err != nil {
		return nil, fmt.Errorf("rebuilding %s: %w", k.Target, err)
	}
	dir := filepath.Join(work, "context")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	b, err := UnsignedBud(dir, k.Dockerfile, k.BuildArgs, secrets, k.Target, kver)
	if err != nil {
		return nil, err
	}
	bb, done := bb.FreshStorage(filepath.Join(work, "buildah"))
	defer done()
	out, err := bb.BudLocal(ctx, r, b, work)
	if err != nil {
		return nil, fmt.Errorf("rebuilding %s: %w", k.Target, err)
	}
	k.KernelVersion = kver
	if out.Inputs, err = k.Inputs(); err != nil {
		return nil, fmt.Errorf("rebuilding %s: %w", k.Target, err)
	}
	return out, nil
}
