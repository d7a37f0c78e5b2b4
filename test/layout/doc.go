// Package layout holds tests of the module's package layout: which
// package may import which. It has no code of its own and nothing imports
// it.
//
// The stage packages (render, kmod, osimage, signing, rollout, bootimage,
// reproduce, report) each implement one step of the pipeline; code two
// stages share lives in a library package below them. stages_test.go fails,
// naming the pair, when a stage imports another stage, directly or through
// libraries, in the import graph `go list -deps` reports.
package layout
