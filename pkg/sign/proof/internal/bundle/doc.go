// Package bundle holds the shapes of the transparency-log bundle and
// RFC 3161 timestamp annotations a cosign signature layer may carry
// (dev.sigstore.cosign/bundle, dev.sigstore.cosign/rfc3161timestamp), as
// cosign's pkg/cosign/bundle declares them:
// https://github.com/sigstore/cosign/blob/v2.6.5/pkg/cosign/bundle/rekor.go
//
// kiln's reuse proof does not check the transparency log, but cosign
// decodes these annotations of an attestation layer before verifying it
// and rejects the layer when they do not decode. pkg/sign/proof does the
// same with these types, named as cosign's are so that a decoding error
// reads word for word as cosign's, without linking cosign's package and
// the Rekor models behind it.
package bundle
