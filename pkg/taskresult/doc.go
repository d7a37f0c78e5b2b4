// Package taskresult writes a step's Tekton results: one file per result
// under the results folder, within the termination-message budget every
// result of a step shares
// (https://tekton.dev/docs/pipelines/tasks/#emitting-results).
//
// It imports no kiln package but the leaf libraries safepath and
// termsafe, so any package may import it, libraries included.
package taskresult
