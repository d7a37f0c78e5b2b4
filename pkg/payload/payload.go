package payload

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kiln-dev/kiln/pkg/imageref"
	"github.com/kiln-dev/kiln/pkg/registry"
)

// Where MCO keeps the payload's OS images.
const (
	Namespace     = "openshift-machine-config-operator"
	OSImageURLMap = "machine-config-osimageurl"
	// ClusterVersionName is the one ClusterVersion of a cluster.
	ClusterVersionName = "version"
)

// Facts are what render needs from the release payload. References are
// recorded as given (tags stay tags); Resolve turns one into a digest.
type Facts struct {
	// BaseOSImage is the default osImageURL: baseOSContainerImage, or the
	// legacy osImageURL key when that is empty.
	BaseOSImage string
	// ExtensionsImage is baseOSExtensionsContainerImage.
	ExtensionsImage string
	// ReleaseVersion is the ConfigMap's releaseVersion, else the
	// ClusterVersion's status.desired.version.
	ReleaseVersion string
	// ReleaseImage is the ClusterVersion's status.desired.image, the
	// release image whose image-references name the component images.
	ReleaseImage string
	// DriverToolkitImage is the release image's driver-toolkit tag (KMM's
	// DTK_AUTO). FromObjects leaves it empty: reading it is a registry
	// call, made by WithDriverToolkit (or DriverToolkitImage).
	DriverToolkitImage string
}

// FromObjects reads the facts from the machine-config-osimageurl ConfigMap
// and, for the release version, the ClusterVersion (either may be nil).
// The ConfigMap is required: without it render would invent a default.
func FromObjects(cm *corev1.ConfigMap, cv *configv1.ClusterVersion) (Facts, error) {
	if cm == nil {
		return Facts{}, fmt.Errorf("reading payload: ConfigMap %s/%s not found", Namespace, OSImageURLMap)
	}
	f := Facts{
		BaseOSImage:     cm.Data["baseOSContainerImage"],
		ExtensionsImage: cm.Data["baseOSExtensionsContainerImage"],
		ReleaseVersion:  cm.Data["releaseVersion"],
	}
	if f.BaseOSImage == "" {
		f.BaseOSImage = cm.Data["osImageURL"]
	}
	if f.BaseOSImage == "" {
		return Facts{}, fmt.Errorf("reading payload: ConfigMap %s/%s: data.baseOSContainerImage is empty (and so is data.osImageURL)", Namespace, OSImageURLMap)
	}
	baseKey := "baseOSContainerImage"
	if cm.Data[baseKey] == "" {
		baseKey = "osImageURL"
	}
	for key, ref := range map[string]string{baseKey: f.BaseOSImage, "baseOSExtensionsContainerImage": f.ExtensionsImage} {
		if err := checkRef(ref); err != nil {
			return Facts{}, fmt.Errorf("reading payload: ConfigMap %s/%s: data.%s: %w", Namespace, OSImageURLMap, key, err)
		}
	}
	if cv != nil {
		if f.ReleaseVersion == "" {
			f.ReleaseVersion = cv.Status.Desired.Version
		}
		f.ReleaseImage = cv.Status.Desired.Image
	}
	return f, nil
}

// WithDriverToolkit returns f with DriverToolkitImage read from
// f.ReleaseImage's image-references.
func (f Facts) WithDriverToolkit(ctx context.Context, r registry.Remote) (Facts, error) {
	if f.ReleaseImage == "" {
		return Facts{}, fmt.Errorf("reading payload: ClusterVersion %s: status.desired.image is empty", ClusterVersionName)
	}
	dtk, err := DriverToolkitImage(ctx, f.ReleaseImage, r)
	if err != nil {
		return Facts{}, err
	}
	f.DriverToolkitImage = dtk
	return f, nil
}

// checkRef parses a payload image reference strictly (registry and tag or
// digest spelled out, as MCO's operator writes them), so that a value that
// is no reference ("not a ref;$(id)") stops here rather than reach a
// build argument or a command line; "" is left to the caller.
func checkRef(s string) error {
	if s == "" {
		return nil
	}
	if _, err := imageref.ParseStrict(s); err != nil {
		return fmt.Errorf("%q is not a fully qualified image reference: %w", s, err)
	}
	return nil
}
