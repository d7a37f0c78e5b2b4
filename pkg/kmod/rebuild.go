package kmod

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kiln-dev/kiln/pkg/osimage"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// RebuildUnsigned rebuilds kmod-build's unsigned image from its attested
// Inputs (BuildType trust.BuildTypeKmodBuild): the recorded Dockerfile and
// build arguments, FROM the recorded OS and driver-toolkit digests, in
// fresh buildah storage under work, without pushing. secretsDir holds
// files named by build secret id (<secret>_<key>, as kmod-build mounts
// them) when the inputs name secrets; their content is no input kiln
// records, so the caller must supply the same. The returned Inputs are
// computed again, with the kernel version read from the OS image.
func RebuildUnsigned(ctx context.Context, r registry.Remote, bb osimage.Buildah, in trust.Inputs, secretsDir, work string) (*osimage.Rebuilt, error) {
	k, err := trust.KmodBuildOf(in)
	if err != nil {
		return nil, fmt.Errorf("rebuilding the kmod image: %w", err)
	}
	kver, err := osKernel(ctx, r, k.OSImage)
	if err != nil {
		return nil, fmt.Errorf("rebuilding %s: reading the kernel version of the OS image: %w", k.Target, err)
	}
	if kver != k.KernelVersion {
		return nil, fmt.Errorf("rebuilding %s: OS image %s has kernel %s, the inputs name %s", k.Target, k.OSImage, kver, k.KernelVersion)
	}
	secrets, err := rebuildSecrets(secretsDir, k.Secrets)
	if err != nil {
		return nil, fmt.Errorf("rebuilding %s: %w", k.Target, err)
	}
	dir := filepath.Join(work, "context")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	b, err := unsignedBud(dir, k.Dockerfile, k.BuildArgs, secrets, k.Target, kver)
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

// rebuildSecrets maps the build secret ids found in dir to their files:
// every file named <secret>_<key> for a secret the inputs name. Each named
// secret needs at least one.
func rebuildSecrets(dir string, names []string) (map[string]string, error) {
	out := map[string]string{}
	if len(names) == 0 {
		return out, nil
	}
	if slices.Contains(names, "") {
		return nil, fmt.Errorf("build secrets %q: an empty name", names)
	}
	if dir == "" {
		return nil, fmt.Errorf("the build used secrets %v; give their files (named <secret>_<key>) in a folder", names)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading build secrets: %w", err)
	}
	for _, n := range names {
		found := false
		for _, e := range entries {
			if e.Type().IsRegular() && strings.HasPrefix(e.Name(), n+"_") {
				out[e.Name()] = filepath.Join(dir, e.Name())
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("build secret %q: no file %s_<key> in %s", n, n, dir)
		}
	}
	return out, nil
}
