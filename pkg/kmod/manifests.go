package kmod

import (
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/work"
)

// ManifestsDir is the folder under work/kmod/ where, with --source dir:,
// the kmod stages write the objects they change (the ModuleDay0 with its
// status), as the cluster would hold them.
const ManifestsDir = "manifests"

// folder is the kmod stages' folder of manifests as a kube.Source: every
// object is read from it exactly as from the apiserver (one c.Get each),
// so both modes run one code path.
//
// A namespaced manifest without a namespace keeps none: `kubectl apply`
// (or a GitOps tool) puts it in its own namespace, which the folder does
// not name, so it is the same namespace as every other namespace-less
// manifest applied with it and none of the namespaces the folder names. A
// namespace-less ModuleDay0 therefore finds a namespace-less Dockerfile
// ConfigMap, and a ModuleDay0 in openshift-kmm does not: on the apiserver
// that ConfigMap would land in the apply's namespace, not openshift-kmm.
// A payload ConfigMap without a namespace is not the payload either, as
// render already reads it.
//
// The ModuleDay0's status is written, not skipped: recordBuilt updates it
// through this client in both modes, and a folder run leaves the updated
// object under work/kmod/manifests/moduleday0s/, so a local run shows what
// the cluster would show after the same run. Status is not applied by a
// GitOps apply, so the file is a record, never an input of a later run
// (the source folder is not modified).
func folder(ws work.Workspace) *kube.Folder {
	return &kube.Folder{
		Output:            filepath.Join(ws.StageDir(work.StageKmodSign), ManifestsDir),
		Path:              outputPath,
		StatusSubresource: []client.Object{&kmmv1beta1.ModuleDay0{}},
	}
}

// outputPath names the file of the one object the kmod stages write:
// moduleday0s/<namespace>_<name>.
func outputPath(gvk schema.GroupVersionKind, ns, name string, deleted bool) (string, string, error) {
	if gvk.GroupKind() == kmmv1beta1.GroupVersion.WithKind("ModuleDay0").GroupKind() && !deleted {
		return "moduleday0s", ns + "_" + name, nil
	}
	return "", "", fmt.Errorf("writing %s %s/%s: the kmod stages write no such object to a folder", gvk.Kind, ns, name)
}

// newClient is a kmod step's one client: the cluster --kubeconfig and
// --context name, or for --source dir:PATH the folder's objects, whose
// writes go to work/kmod/manifests/.
func newClient(ko *kube.KubeOptions, ws work.Workspace) (client.Client, error) {
	src, err := kube.SourceOf(ko, folder(ws))
	if err != nil {
		return nil, err
	}
	return kube.New(src)
}
