// Package kmodbuild builds kmod-build's unsigned kernel-module image: the
// build arguments KMM's day-0 proposal defines, the kernels a payload
// offers by kernelType, the build secrets a ModuleDay0 may hand to the
// build, the `buildah bud` of its Dockerfile, and the rebuild of that image
// from its attested inputs (RebuildUnsigned) that reproduce runs.
//
// It is a library: the kmod stage, the module signer and reproduce import
// it; it imports no stage package.
package kmodbuild
