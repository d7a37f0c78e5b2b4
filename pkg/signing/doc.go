// Package signing signs images with cosign's library (key from a mounted
// Secret), attaches an in-toto SLSA v1 provenance attestation of the build
// inputs in cosign's registry layout (sha256-<hex>.sig / .att), and checks
// an image the way CRI-O does: a containers/image policy.json with a
// sigstoreSigned requirement, signatures found through sigstore
// attachments. It also writes the policy.json and registries.d fragments a
// cluster admin installs on nodes.
//
// Keyless signing (Fulcio/Rekor) can be configured but returns
// ErrKeylessUnavailable: cosign's keyless signer lives in its CLI packages,
// which would add about 80 modules (cloud KMS SDKs) to kiln-steps.
package signing
