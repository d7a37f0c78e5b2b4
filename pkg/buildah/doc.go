// Package buildah runs the buildah CLI for kiln's container builds:
// `buildah bud` of a Containerfile with the registry settings of a
// registry.Remote, the result read back from an OCI layout (BudLocal) and
// pushed with kiln's own registry client (BudAndPush), and fresh storage
// for a rebuild that must share nothing with an earlier build.
//
// It is a library: the node image build (pkg/imagebuild), the kmod build
// (pkg/kmodbuild, pkg/kmod) and reproduce import it; it imports no stage
// package.
package buildah
