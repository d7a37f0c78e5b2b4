// Package signing signs and verifies images with cosign, attaches SLSA
// provenance and evaluates containers/image signature policies.
//
// It lands with issue #4; DESIGN §2 and §5 define its contract.
package signing
