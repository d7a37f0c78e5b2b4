package render

import (
	"fmt"
	"strings"

	"github.com/clarketm/json"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kiln-dev/kiln/pkg/ignres"
)

// MaxConfigSize is MCO's cap on a rendered MachineConfig, etcd's default
// request size limit (pkg/controller/common/constants.go
// MaxMachineConfigSize); pkg/ignres holds the value for every reader.
const MaxConfigSize = ignres.MaxRenderedConfig

// Stand-ins of MCO's lengths for values kiln cannot know: a Kubernetes UID
// is 36 bytes, and MCO's version.Hash is the 40-hex git commit
// hack/build-go.sh builds it from.
var (
	placeholderUID  = strings.Repeat("0", 36)
	placeholderHash = strings.Repeat("0", 40)
)

// checkSize refuses a rendered config that MCO would refuse as too large,
// measured on MCO's bytes (mcoSize), so that a config at the boundary gets
// MCO's answer: over the limit fails, at the limit passes.
func checkSize(pool *mcfgv1.MachineConfigPool, inputs []*mcfgv1.MachineConfig, name string, spec mcfgv1.MachineConfigSpec, d Defaults) error {
	size, err := mcoSize(pool, inputs, name, spec, d)
	if err != nil {
		return err
	}
	if size > MaxConfigSize {
		return fmt.Errorf("rendered MachineConfig %s is too large: %d bytes, limit %d (etcd's request size)", name, size, MaxConfigSize)
	}
	return nil
}

// mcoSize is the length of the bytes MCO measures: github.com/clarketm/json
// (HTML-escaping, empty structs omitted) of the whole MachineConfig as MCO's
// render controller builds it (pkg/controller/common/helpers.go
// ValidateMachineConfigSize, called by pkg/controller/render
// syncGeneratedMachineConfig on generateRenderedMachineConfig's object):
// no apiVersion/kind, no labels, the name, the pool as controller owner,
// the generated-by-controller-version and release-image-version
// annotations and, when the OS image is overridden, the override
// annotation. kiln's own object differs (kind, kiln.dev/ label and
// annotation, no controller version), so it is not what is measured.
func mcoSize(pool *mcfgv1.MachineConfigPool, inputs []*mcfgv1.MachineConfig, name string, spec mcfgv1.MachineConfigSpec, d Defaults) (int, error) {
	uid := pool.UID
	if uid == "" { // a pool from manifests; MCO's always has one
		uid = types.UID(placeholderUID)
	}
	yes := true
	mc := &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Annotations: map[string]string{
				GeneratedByAnnotation:    controllerVersion(inputs),
				ReleaseVersionAnnotation: d.ReleaseVersion,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfigPool",
				Name: pool.Name, UID: uid, Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: spec,
	}
	if spec.OSImageURL != d.OSImageURL {
		mc.Annotations[OverriddenAnnotation] = "true"
	}
	data, err := json.Marshal(mc)
	if err != nil {
		return 0, fmt.Errorf("measuring rendered config %s: %w", name, err)
	}
	return len(data), nil
}

// controllerVersion is MCO's version.Hash as its generated input MCs carry
// it (MCO refuses to render while they disagree with it), else a stand-in
// of its length.
func controllerVersion(inputs []*mcfgv1.MachineConfig) string {
	for _, mc := range inputs {
		if v := mc.Annotations[GeneratedByAnnotation]; v != "" {
			return v
		}
	}
	return placeholderHash
}
