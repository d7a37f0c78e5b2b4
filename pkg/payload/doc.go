// Package payload reads facts from the release payload: the base OS image,
// the extensions image and the release version, from MCO's
// machine-config-osimageurl ConfigMap and the ClusterVersion; the component
// images (driver-toolkit, rhel-coreos, …) from the release image's
// release-manifests/image-references (ReleaseImages); and resolves image
// tags to digests through the registry (go-containerregistry).
//
// Render records references as given and never calls Resolve or
// ReleaseImages; the image and kmod stages do (docs/architecture.md).
package payload
