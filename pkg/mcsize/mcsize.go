package mcsize

import (
	"fmt"
	"strings"

	"github.com/clarketm/json"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kiln-dev/kiln/pkg/ignres"
)

// Max is MCO's cap on a rendered MachineConfig (pkg/controller/common
// constants.go MaxMachineConfigSize), etcd's default request size.
const Max = ignres.MaxRenderedConfig

// MCO's annotations on a rendered config.
const (
	GeneratedByAnnotation    = "machineconfiguration.openshift.io/generated-by-controller-version"
	ReleaseVersionAnnotation = "machineconfiguration.openshift.io/release-image-version"
	OverriddenAnnotation     = "machineconfiguration.openshift.io/os-image-url-overridden"
)

// Stand-ins of MCO's lengths for values kiln cannot know: a Kubernetes UID
// is 36 bytes, and MCO's version.Hash is the 40-hex git commit
// hack/build-go.sh builds it from.
var (
	PlaceholderUID  = types.UID(strings.Repeat("0", 36))
	PlaceholderHash = strings.Repeat("0", 40)
)

// Rendered is what MCO's rendered object is made of.
type Rendered struct {
	Name, Pool string
	// PoolUID is the pool's UID; empty means PlaceholderUID.
	PoolUID types.UID
	// ControllerVersion is MCO's version.Hash; empty means
	// PlaceholderHash.
	ControllerVersion string
	ReleaseVersion    string
	// Overridden says osImageURL differs from the payload's.
	Overridden bool
	Spec       mcfgv1.MachineConfigSpec
}

// Measure is the length of the bytes MCO measures for r: no
// apiVersion/kind, no labels, the name, the pool as controller owner, the
// controller version and release version annotations and, when the OS
// image is overridden, the override annotation.
func Measure(r Rendered) (int, error) {
	if r.PoolUID == "" {
		r.PoolUID = PlaceholderUID
	}
	if r.ControllerVersion == "" {
		r.ControllerVersion = PlaceholderHash
	}
	yes := true
	mc := &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{
			Name: r.Name,
			Annotations: map[string]string{
				GeneratedByAnnotation:    r.ControllerVersion,
				ReleaseVersionAnnotation: r.ReleaseVersion,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfigPool",
				Name: r.Pool, UID: r.PoolUID, Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: r.Spec,
	}
	if r.Overridden {
		mc.Annotations[OverriddenAnnotation] = "true"
	}
	data, err := json.Marshal(mc)
	if err != nil {
		return 0, fmt.Errorf("measuring rendered config %s: %w", r.Name, err)
	}
	return len(data), nil
}

// Check refuses r when MCO would refuse it as too large: over Max fails,
// at Max passes.
func Check(r Rendered) error {
	size, err := Measure(r)
	if err != nil {
		return err
	}
	if size > Max {
		return fmt.Errorf("rendered MachineConfig %s is too large: %d bytes, limit %d (etcd's request size)", r.Name, size, Max)
	}
	return nil
}

// FromObject is MCO's view of a rendered MachineConfig that render wrote:
// the pool from poolLabel (or the owner reference), its UID from the owner
// reference, the release version and override from their annotations. The
// controller version is not recorded, so it is its stand-in, as in render's
// own measure when no input carries one.
func FromObject(mc *mcfgv1.MachineConfig, poolLabel string) Rendered {
	r := Rendered{
		Name: mc.Name, Pool: mc.Labels[poolLabel],
		ControllerVersion: mc.Annotations[GeneratedByAnnotation],
		ReleaseVersion:    mc.Annotations[ReleaseVersionAnnotation],
		Overridden:        mc.Annotations[OverriddenAnnotation] == "true",
		Spec:              mc.Spec,
	}
	for _, o := range mc.OwnerReferences {
		if o.Kind == "MachineConfigPool" {
			r.Pool, r.PoolUID = o.Name, o.UID
		}
	}
	return r
}
