// Package proof checks that an image in a registry is a fact kiln made:
// a cosign signature from kiln's identity over its digest and an in-toto
// attestation from it binding exactly the expected inputs (Prove),
// never writing to the registry.
//
// It verifies cosign's registry layout (the sha256-<hex>.sig and .att
// artifacts) as cosign's VerifyImageSignature and VerifyImageAttestation
// do with kiln's options (https://github.com/sigstore/cosign/blob/v2.6.5/pkg/cosign/verify.go):
// the simple-signing payload's signature and its digest claim, the DSSE
// envelope's signature over its pre-authentication encoding and an
// in-toto subject naming the digest, and for a keyless identity the
// certificate's chain to the Fulcio roots, its exact SAN and OIDC issuer
// and its validity now; the transparency log and SCT are not required.
// It does so on the libraries cosign itself verifies with: sigstore's
// signature, DSSE and cryptoutils packages, go-securesystemslib's DSSE
// verifier, Go's x509 and go-containerregistry through pkg/registry. The
// same types decode the same bytes, so a rejection reads word for word as
// cosign's, and the tests hold it to cosign's answers side by side.
//
// Why not cosign's pkg/cosign: linking it (or any of its pkg/oci
// packages, which import its bundle and Rekor models) brings some 350
// packages, the Rekor and Fulcio clients, TUF, sigstore-go, protobuf
// specs and go-openapi, whose package initialisation was most of
// kiln-image-build's start. Keyless verification needs none of them when
// the log is not checked, so it is here too, rather than in a separate
// process or binary: one verification for both identities, and the same
// results as before.
//
// It is pkg/sign's verification without the signer: no key loading,
// Fulcio or Rekor client, and no containers/image policy, so a step that
// only proves reuse (image-build, linked alone as kiln-image-build) does
// not link and initialise them at every start. pkg/sign imports it and
// keeps Prove and Statements under its own name; stage packages that
// only prove import it directly. It imports no stage package.
package proof
