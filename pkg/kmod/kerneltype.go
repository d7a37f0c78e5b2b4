package kmod

import (
	"errors"
	"os"
	"strings"

	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/kmodbuild"
	"github.com/kiln-dev/kiln/pkg/work"
)

// poolKernelType is the kernelType of the pool's rendered config, which
// render wrote into the workspace; MCO's default when there is none (a
// kmod build run on its own). The pool's image-build swaps the base's
// kernel for this one, so the modules must be built for it.
func poolKernelType(ws work.Workspace) (kernelType, from string, err error) {
	p := ws.RenderedPath()
	if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
		return kmodbuild.KernelTypeDefault, "no rendered config in the workspace", nil
	}
	mc, err := imagebuild.ReadRendered(p)
	if err != nil {
		return "", "", err
	}
	kt := strings.TrimSpace(mc.Spec.KernelType)
	if kt == "" {
		kt = kmodbuild.KernelTypeDefault
	}
	return kt, "spec.kernelType of " + mc.Name, nil
}
