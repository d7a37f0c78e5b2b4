//go:build !rebuildapi

package reproduce

import (
	"context"
	"errors"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/osimage"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// errPending stands in for the builders' rebuild API until it is merged.
var errPending = errors.New("rebuild API not merged yet")

// rebuiltImage has osimage.Rebuilt's fields.
type rebuiltImage struct {
	Digest v1.Hash
	Image  v1.Image
	Index  v1.ImageIndex
	Inputs trust.Inputs
}

func rebuildNodeImage(context.Context, registry.Remote, osimage.Buildah, trust.Inputs, *mcfgv1.MachineConfig, string, string) (*rebuiltImage, error) {
	return nil, errPending
}

func rebuildKmodBuild(context.Context, registry.Remote, osimage.Buildah, trust.Inputs, string, string) (*rebuiltImage, error) {
	return nil, errPending
}

func resignKmod(v1.Image, v1.Image, trust.Inputs) (*rebuiltImage, error) { return nil, errPending }
