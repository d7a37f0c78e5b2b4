// Command kiln-image-build is kiln-steps image-build as a binary of its
// own (cmd/cli/imagebuildcmd): the same flags, results and messages, but
// it links no other stage, so the process starts without the package
// initialization of the Kubernetes clients and schemes the other stages
// need.
package main
