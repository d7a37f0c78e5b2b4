// Package proof checks that an image in a registry is a fact kiln made:
// a cosign signature from kiln's identity over its digest and an in-toto
// attestation from it binding exactly the expected inputs (Prove), read
// with cosign's own verification and never writing to the registry.
//
// It is pkg/sign's verification without the signer: no key loading,
// Fulcio or Rekor client, and no containers/image policy, so a step that
// only proves reuse (image-build, linked alone as kiln-image-build) does
// not link and initialise them at every start. pkg/sign imports it and
// keeps Prove, Statements, CheckOpts and MaxAttachmentSize under its own
// name; stage packages that only prove import it directly. It imports no
// stage package.
package proof
