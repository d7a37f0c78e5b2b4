package rollout

import (
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kiln-dev/kiln/pkg/kube"
)

// folder is rollout's folder of manifests (--source dir:PATH) as a
// kube.Folder: reads come from the manifests, and the one object a run
// there writes, kiln's MachineConfig for pool, goes to output as
// <name>.yaml, the GitOps change. Every other write (a pool setting, a
// deletion) is refused before anything changes: without an MCO acting on
// it, it would be a file nobody asked for.
func folder(output, pool string) *kube.Folder {
	name := MachineConfigName(pool)
	mc := mcfgv1.GroupVersion.WithKind("MachineConfig").GroupKind()
	return &kube.Folder{Output: output, Path: func(gvk schema.GroupVersionKind, ns, n string, deleted bool) (string, string, error) {
		if gvk.GroupKind() == mc && ns == "" && n == name && !deleted {
			return "", n, nil
		}
		verb := "writing"
		if deleted {
			verb = "deleting"
		}
		return "", "", fmt.Errorf("%s %s %q: a rollout to a folder writes only MachineConfig %s", verb, gvk.Kind, n, name)
	}}
}
