package kmod

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/manifests"
)

// loadConfigMaps reads every ConfigMap (also inside v1 Lists) from the
// manifests under dir, the way every stage reads a manifest folder.
func loadConfigMaps(dir string) ([]*corev1.ConfigMap, error) {
	var out []*corev1.ConfigMap
	err := manifests.Walk(dir, func(obj runtime.Object) error {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			out = append(out, cm)
		}
		return nil
	})
	return out, err
}
