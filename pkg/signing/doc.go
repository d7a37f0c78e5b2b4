// Package signing is the image-sign and verify stage: the steps
// `kiln-steps image-sign` and `kiln-steps verify`. image-sign signs the
// image image-build pushed and attests its provenance, with the drift
// gate's prediction and the node import check among the byproducts;
// verify evaluates the node policy for one digest and writes the policy
// fragments. The signing and verification themselves are pkg/sign.
//
// Only cmd/ (and tests driving the steps) import this stage package.
package signing
