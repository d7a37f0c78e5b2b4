// Command images (make images) builds kiln-trigger and kiln-steps from this
// checkout, pushes them to -registry with the user's auth file, signs each
// with a cosign key (or keyless), attaches SLSA v1 provenance and writes
// the digests to -out/images.json and images.env (pkg/release).
//
//	go run ./hack/images -registry quay.io/me -tag v0.1.0 -key cosign.key
package main
