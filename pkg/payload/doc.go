// Package payload reads facts from the release payload: the base OS image,
// the extensions image and the release version, from MCO's
// machine-config-osimageurl ConfigMap and the ClusterVersion, and resolves
// image tags to digests through the registry (go-containerregistry).
//
// Render records references as given and never calls Resolve; the image
// stages do. DESIGN §2 and §4 define the contract.
package payload
