package reproduce

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/kmodbuild"
	"github.com/kiln-dev/kiln/pkg/modsign"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// The calls into the builders' rebuild API, in one place: each rebuilds
// without reusing anything and without pushing, in the caller's work
// folder, and returns the rebuild's own Inputs for the caller to check
// against the attested ones.

// rebuiltImage is a rebuild: its digest, the image or index, and the
// Inputs it was built from.
type rebuiltImage = buildah.Rebuilt

// rebuildNodeImage rebuilds a node image from its attested inputs and the
// verified rendered config; repository is the image's own (labels and
// annotations do not name it, but the build input needs one).
func rebuildNodeImage(ctx context.Context, r registry.Remote, bb buildah.Buildah, in trust.Inputs, mc *mcfgv1.MachineConfig, repository, work string) (*rebuiltImage, error) {
	n, err := trust.NodeImageOf(in)
	if err != nil {
		return nil, fmt.Errorf("reading the attested node image inputs: %w", err)
	}
	bi := imagebuild.BuildahInput{
		BuildInput: imagebuild.BuildInput{
			Base: n.BaseImage, Repository: repository, Pool: n.Pool, Rendered: mc,
			KmodDigests: n.KmodDigests, Source: n.Source,
		},
		ExtensionsImage: n.ExtensionsImage, Containerfile: n.UserContainerfile,
	}
	return imagebuild.Rebuild(ctx, r, bb, bi, n.Builder, work)
}

// rebuildKmodBuild rebuilds an unsigned kmod image from its attested
// inputs, with the build secrets of secretsDir.
func rebuildKmodBuild(ctx context.Context, r registry.Remote, bb buildah.Buildah, in trust.Inputs, secretsDir, work string) (*rebuiltImage, error) {
	return kmodbuild.RebuildUnsigned(ctx, r, bb, in, secretsDir, work)
}

// resignKmod applies signed's module signatures, after checking them, to
// unsigned: the signed image rebuilt without the private key.
func resignKmod(unsigned, signed v1.Image, in trust.Inputs) (*rebuiltImage, error) {
	return modsign.Resign(unsigned, signed, in)
}
