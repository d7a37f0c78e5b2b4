// Package exitcode is kiln's table of process exit codes and the error
// classification that picks one: usage errors, refused checks, rejected
// input, faults (a registry or cluster that never answered).
//
// It is a leaf: it imports no kiln package, so every package may import
// it, libraries (pkg/registry, pkg/manifests, pkg/pipeline) included,
// without pulling in the step plumbing of pkg/step.
package exitcode
