package examples

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/manifests"
)

// Objects reads a manifests folder such as examples/cluster with
// pkg/manifests, as every stage reads it, for tests that apply it to an
// apiserver.
func Objects(dir string) ([]client.Object, error) {
	var out []client.Object
	err := manifests.Walk(dir, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if !ok {
			return fmt.Errorf("%T is not an API object", o)
		}
		out = append(out, obj)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading manifests in %s: %w", dir, err)
	}
	return out, nil
}

// StatusOf returns, for objects whose manifest carries a status the
// apiserver drops on create (ClusterVersion, Infrastructure), a function
// putting it back on the created object, which has the server's
// resourceVersion and UID; nil for the others.
func StatusOf(obj client.Object) func(client.Object) client.Object {
	want := obj.DeepCopyObject()
	switch obj.GetObjectKind().GroupVersionKind().Kind {
	case "ClusterVersion", "Infrastructure":
	default:
		return nil
	}
	return func(created client.Object) client.Object {
		out := want.(client.Object)
		out.SetResourceVersion(created.GetResourceVersion())
		out.SetUID(created.GetUID())
		return out
	}
}
