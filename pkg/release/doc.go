// Package release publishes and installs kiln's own images: it pushes what
// pkg/release/build makes through pkg/registry, signs and attests each
// image with pkg/signing (SLSA v1 provenance), and installs config/ with
// their digests pinned through a generated kustomize overlay
// (https://kubectl.docs.kubernetes.io/references/kustomize/kustomization/images/),
// pruning what an earlier install applied and a newer one no longer has.
package release

import "github.com/kiln-dev/kiln/pkg/release/build"

// Names of kiln's images (pkg/release/build).
const (
	TriggerName        = build.TriggerName
	StepsName          = build.StepsName
	UpstreamRepository = build.UpstreamRepository
)

// Platform and Images are pkg/release/build's.
type (
	Platform = build.Platform
	Images   = build.Images
)
