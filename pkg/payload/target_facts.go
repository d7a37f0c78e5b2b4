package payload

import (
	"context"
	"fmt"

	"github.com/kiln-dev/kiln/pkg/imageref"
	"github.com/kiln-dev/kiln/pkg/registry"
)

// TagRHELCoreOSExtensions is the payload's extensions image, which MCO's
// machine-config-osimageurl ConfigMap names as
// baseOSExtensionsContainerImage (its rhel-coreos-extensions placeholder,
// https://github.com/openshift/machine-config-operator/blob/master/install/0000_80_machine-config_05_osimageurl.yaml).
const TagRHELCoreOSExtensions = "rhel-coreos-extensions"

// ReleaseFacts reads the payload facts of a release the cluster does not
// run yet, from its release image alone: the base OS image (rhel-coreos),
// the extensions image (rhel-coreos-extensions) and the driver-toolkit
// image, as the release's image-references names them, for a build that
// prepares that release (an upgrade-ahead run). The ConfigMap
// machine-config-osimageurl still holds the running release's, so it is
// not read. release must be a reference by digest, and so must each of
// the three images: what is built for the release is then exactly what the
// release ships. The release image is read through r's mirrors.
func ReleaseFacts(ctx context.Context, version, release string, r registry.Remote) (Facts, error) {
	if !imageref.IsDigestRef(release) {
		return Facts{}, fmt.Errorf("reading release %s: image %q is not a reference by digest", version, release)
	}
	tags, err := ReleaseImages(ctx, release, r)
	if err != nil {
		return Facts{}, fmt.Errorf("reading release %s: %w", version, err)
	}
	f := Facts{ReleaseVersion: version, ReleaseImage: release}
	for _, c := range []struct {
		tag string
		to  *string
	}{{TagRHELCoreOS, &f.BaseOSImage}, {TagRHELCoreOSExtensions, &f.ExtensionsImage}, {TagDriverToolkit, &f.DriverToolkitImage}} {
		ref, err := tags.Lookup(c.tag)
		if err != nil {
			return Facts{}, fmt.Errorf("reading release %s: %w", version, err)
		}
		if !imageref.IsDigestRef(ref) {
			return Facts{}, fmt.Errorf("reading release %s: release image %s: %s: tag %q: %q is not a reference by digest", version, release, ImageReferencesPath, c.tag, ref)
		}
		*c.to = ref
	}
	return f, nil
}
