// Package imagebuildcmd is the image-build stage's command: kiln-steps
// adds it as its image-build subcommand (cmd/cli) and cmd/kiln-image-build
// runs it as its root.
//
// It imports cmd/cli/base and pkg/osimage and no other stage, so that
// kiln-image-build links only what image-build runs: Go runs the init of
// every linked package before main, and the other stages' libraries
// (Kubernetes clients and schemes, CRD validation) would cost each build
// step's start tens of milliseconds. cmd/ packages may import it.
package imagebuildcmd
