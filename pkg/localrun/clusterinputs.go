package localrun

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/manifests"
	"github.com/kiln-dev/kiln/pkg/registry"
)

// loadClusterInputs reads the registry objects of a manifests folder
// (directory mode) with pkg/manifests, the one strict decoder: see
// registry.ClusterInputsFrom. It lives here, not in pkg/registry, so that
// the registry library (linked into every step) does not link the
// manifests decoder and the API schemes and validators behind it.
func loadClusterInputs(dir string) (registry.ClusterInputs, error) {
	var objs []runtime.Object
	if err := manifests.Walk(dir, func(o runtime.Object) error { objs = append(objs, o); return nil }); err != nil {
		return registry.ClusterInputs{}, err
	}
	in, err := registry.ClusterInputsFrom(objs...)
	if err != nil {
		return registry.ClusterInputs{}, fmt.Errorf("loading manifests from %s: %w", dir, err)
	}
	return in, nil
}
