// Package sign signs images with cosign's library (key from a mounted
// Secret), attaches an in-toto SLSA v1 provenance attestation of the build
// inputs in cosign's registry layout (sha256-<hex>.sig / .att), and checks
// an image the way CRI-O does: a containers/image policy.json with a
// sigstoreSigned requirement, signatures found through sigstore
// attachments. It also writes the policy.json and registries.d fragments a
// cluster admin installs on nodes.
//
// Keyless signing asks Fulcio for a certificate of an ephemeral key for the
// identity in an OIDC token (a projected ServiceAccount token in a pod) and
// uploads the signature and attestation to Rekor, as `cosign sign` does.
// It is written against Fulcio's and Rekor's client libraries: cosign's own
// keyless signer lives in its CLI packages, which would add about 80
// modules (cloud KMS SDKs) to kiln-steps. The Fulcio path is tested against
// a loopback stand-in; the Rekor upload is cosign's TLogUpload and has no
// test here (no Rekor is reachable), and --rekor-url "" skips it.
//
// It is a library: the image-sign and verify stage (pkg/signing) and the
// stages that sign or check what they push (kmod, osimage, rollout,
// reproduce, release, report) import it; it imports no stage package.
// Its reuse proof (Prove, Statements, CheckOpts) lives in pkg/sign/proof,
// which image-build imports alone so as not to link the signer.
package sign
