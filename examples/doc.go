// Package examples builds the container images the sample cluster in
// examples/cluster refers to, so that `make run` needs no pulls: a stand-in
// RHCOS base image, its extensions image and a release image naming both.
//
// Every byte is fixed (timestamps, ordering, uid/gid, uncompressed layers,
// no host files), so the digests are constants of the source code and the
// manifests can pin them. TestManifestsPinBuiltImages fails when a manifest
// and the builder disagree; hack/examplebase pushes the images.
//
// The Go code lives here and not in examples/cluster because that folder is
// read as manifests by every stage; only .yaml/.yml/.json files count there,
// but keeping it data-only makes it a plain GitOps checkout.
package examples
