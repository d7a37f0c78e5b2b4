// Package registry is kiln's one way to reach container registries: every
// read and write of an image, index, tag or blob goes through Remote, so
// credentials (looked up as podman, buildah and CRI-O do), mirrors, CAs,
// plain-HTTP hosts, the proxy and retries are applied the same way in
// every stage (boundary_test.go fails on a go-containerregistry remote
// call anywhere else).
//
// Reads of images kiln consumes go through the mirrors a cluster's nodes
// would use, in the order CRI-O tries them; reads of what kiln wrote
// itself and every write go to the named registry only. FromCluster and
// ClusterInputsFrom build that registry configuration from the cluster's
// ImageDigestMirrorSets, ImageTagMirrorSets, image config and
// additionalTrustedCA the way the Machine Config Operator writes
// registries.conf and certs.d for CRI-O
// (https://github.com/containers/image/blob/main/docs/containers-registries.conf.5.md);
// WriteDir and LoadDir carry it between steps as a folder.
package registry
