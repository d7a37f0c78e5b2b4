package mcrender

import (
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/mcsize"
)

// MaxConfigSize is MCO's cap on a rendered MachineConfig, etcd's default
// request size limit (pkg/controller/common/constants.go
// MaxMachineConfigSize); pkg/mcsize measures against it for every stage.
const MaxConfigSize = mcsize.Max

// Stand-ins of MCO's lengths for values kiln cannot know (mcsize).
var (
	placeholderUID  = string(mcsize.PlaceholderUID)
	placeholderHash = mcsize.PlaceholderHash
)

// checkSize refuses a rendered config that MCO would refuse as too large,
// measured on MCO's bytes (mcoRendered, mcsize.Check), so that a config at
// the boundary gets MCO's answer: over the limit fails, at the limit
// passes. image-build measures the same way.
func checkSize(pool *mcfgv1.MachineConfigPool, inputs []*mcfgv1.MachineConfig, name string, spec mcfgv1.MachineConfigSpec, d Defaults) error {
	return mcsize.Check(mcoRendered(pool, inputs, name, spec, d))
}

// mcoSize is the length of the bytes MCO measures (mcsize.Measure).
func mcoSize(pool *mcfgv1.MachineConfigPool, inputs []*mcfgv1.MachineConfig, name string, spec mcfgv1.MachineConfigSpec, d Defaults) (int, error) {
	return mcsize.Measure(mcoRendered(pool, inputs, name, spec, d))
}

// mcoRendered is the object MCO's render controller builds: kiln's own
// differs (kind, kiln.dev/ label and annotation, no controller version), so
// it is not what is measured. A pool from manifests has no UID; MCO's
// always has one, of the stand-in's length.
func mcoRendered(pool *mcfgv1.MachineConfigPool, inputs []*mcfgv1.MachineConfig, name string, spec mcfgv1.MachineConfigSpec, d Defaults) mcsize.Rendered {
	return mcsize.Rendered{
		Name: name, Pool: pool.Name, PoolUID: pool.UID,
		ControllerVersion: controllerVersion(inputs),
		ReleaseVersion:    d.ReleaseVersion,
		Overridden:        spec.OSImageURL != d.OSImageURL,
		Spec:              spec,
	}
}

// controllerVersion is MCO's version.Hash as its generated input MCs carry
// it (MCO refuses to render while they disagree with it), else "" for
// mcsize's stand-in of its length.
func controllerVersion(inputs []*mcfgv1.MachineConfig) string {
	for _, mc := range inputs {
		if v := mc.Annotations[GeneratedByAnnotation]; v != "" {
			return v
		}
	}
	return ""
}
