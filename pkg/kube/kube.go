package kube

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Source says where a stage's objects come from: the cluster named by
// Kubeconfig and Context, or, when Folder is set, a folder of manifests.
type Source struct {
	// Kubeconfig is a kubeconfig path; empty means controller-runtime's
	// order (LoadRESTConfig).
	Kubeconfig string
	// Context is the kubeconfig context; empty means its current-context.
	Context string
	// Folder, when set, replaces the cluster.
	Folder *Folder
}

// Folder is a folder of manifests read in place of the cluster. Reads see
// the manifests; every create, update, patch and delete also writes one
// file under Output, so that Output holds the GitOps change. Dir is never
// modified.
type Folder struct {
	// Dir holds the manifests, read with pkg/manifests (the same checks as
	// every folder-mode stage: unknown fields, CRD schemas, names).
	Dir string
	// Output receives the written objects.
	Output string
	// Path names the output file of an object, as a sub-folder of Output
	// (may be empty) and a base name without ".yaml"; deleted is true for
	// the stub that records a deletion. An error refuses the write before
	// the object changes.
	Path func(gvk schema.GroupVersionKind, namespace, name string, deleted bool) (sub, base string, err error)
	// Groups are API groups outside kiln's scheme whose manifests are kept
	// as unstructured objects; manifests of other unknown groups are
	// ignored, as a stage that does not read them would.
	Groups []string
	// Kinds are namespaced kinds of Groups a stage lists or reads even when
	// the folder holds none of them, so that a folder without them reads
	// as empty rather than as an API the cluster does not serve.
	Kinds []schema.GroupVersionKind
	// StatusSubresource lists the types whose status is a subresource on
	// the apiserver, so that status writes behave as there.
	StatusSubresource []client.Object
}

// New returns the client of s: controller-runtime's client of the cluster,
// or, for a folder, controller-runtime's fake client holding the folder's
// objects and writing every change under Folder.Output.
func New(s Source) (client.WithWatch, error) {
	if s.Folder != nil {
		return s.Folder.open()
	}
	return connect(s.Kubeconfig, s.Context)
}

// SourceOf is the Source a stage's --kubeconfig, --context and --source
// flags name. For a dir: source, folder says how the stage reads and
// writes a folder; its Dir is set from the flag.
func SourceOf(o *KubeOptions, folder *Folder) (Source, error) {
	dir, err := o.SourceDir()
	if err != nil {
		return Source{}, err
	}
	src := Source{Kubeconfig: o.Kubeconfig, Context: o.Context}
	if dir != "" {
		f := *folder
		f.Dir = dir
		src.Folder = &f
	}
	return src, nil
}

// Client returns a client of the cluster o names (--kubeconfig,
// --context) with kiln's scheme that can also watch.
func Client(o *KubeOptions) (client.WithWatch, error) {
	return New(Source{Kubeconfig: o.Kubeconfig, Context: o.Context})
}

// RESTConfig returns the client config of the cluster o names
// (LoadRESTConfig).
func RESTConfig(o *KubeOptions) (*rest.Config, error) {
	return LoadRESTConfig(o.Kubeconfig, o.Context)
}
