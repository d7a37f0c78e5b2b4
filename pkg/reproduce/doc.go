// Package reproduce is `kiln-steps reproduce`: it verifies kiln's
// attestation on an image, rebuilds the image from exactly the inputs the
// attestation records (in a fresh temporary folder, never pushing), and
// compares the rebuild with the image: the same digest, or the layers,
// files and config fields that differ.
//
// Nothing the registry says about the image is trusted beyond what kiln's
// identity signed: the inputs come from the verified attestation, the
// rendered config's bytes are checked against the attested hash, and the
// comparison reads both images' blobs, not their labels.
package reproduce
