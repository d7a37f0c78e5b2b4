// Package manifests reads Kubernetes objects from a folder of manifests —
// a GitOps checkout, or the input of local mode — the one way every stage
// reads them: every .yaml, .yml and .json file under the folder, several
// YAML documents per file, v1 Lists expanded.
//
// Kinds kiln's scheme knows (its own ModuleDay0 and BootImageHistory, the
// OpenShift and Kubernetes kinds it reads) are decoded strictly, as the
// apiserver does with fieldValidation=Strict: an unknown or duplicated
// field is an error naming the file, the object and the field path, never
// silently dropped. A Secret's stringData is merged into data as the
// apiserver does on write, so every reader sees one form.
//
// A folder is held to what `kubectl apply --dry-run=server` would accept,
// with the apiserver's own words: a kind or version unknown in a group
// kiln reads, an invalid name, namespace, label or annotation
// (k8s.io/apimachinery's ObjectMeta validation), a ConfigMap or Secret
// key, a custom resource its CRD's OpenAPI schema or CEL rules refuse
// (k8s.io/apiextensions-apiserver, against the embedded CRDs) and a second
// object of the same kind, namespace and name are errors naming the file
// and the object. Only regular files are read, each through a size cap.
package manifests
