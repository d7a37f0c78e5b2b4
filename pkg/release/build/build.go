package build

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// StepsBasePath is where hack/stepsbase.sh caches the steps base of suite
// and recipe (hack/versions.sh's STEPSBASE_SUITE and STEPSBASE_RECIPE)
// under the kiln cache.
func StepsBasePath(cache, suite, recipe string) string {
	return filepath.Join(cache, "images", fmt.Sprintf("stepsbase-%s-r%s.tar.gz", suite, recipe))
}

// Images are kiln's two images, built from one checkout.
type Images struct {
	Trigger, Steps v1.Image
}

// BuildOptions say what to build from.
type BuildOptions struct {
	// Root is the checkout (the module root).
	Root string
	// StepsBase is the steps base tarball (StepsBasePath).
	StepsBase string
	Platform  Platform
	// WorkDir receives the binaries; it must outlive the images, whose
	// layers read them lazily. Empty means a new temporary folder the
	// caller removes (returned).
	WorkDir string
}

// Build builds the binaries and both images.
func Build(ctx context.Context, o BuildOptions) (Images, string, error) {
	dir := o.WorkDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "kiln-release-"); err != nil {
			return Images{}, "", fmt.Errorf("building kiln's images: %w", err)
		}
	}
	trigger, err := BuildBinary(ctx, o.Root, "./cmd/kiln-trigger", dir, TriggerName, o.Platform)
	if err != nil {
		return Images{}, dir, err
	}
	steps, err := BuildStepsBinaries(ctx, o.Root, dir, o.Platform)
	if err != nil {
		return Images{}, dir, err
	}
	var imgs Images
	if imgs.Trigger, err = TriggerImage(trigger, o.Platform); err != nil {
		return Images{}, dir, fmt.Errorf("building the %s image: %w", TriggerName, err)
	}
	if imgs.Steps, err = StepsImage(o.StepsBase, steps, o.Platform); err != nil {
		return Images{}, dir, fmt.Errorf("building the %s image: %w", StepsName, err)
	}
	return imgs, dir, nil
}
