// Package work is the layout of the "work" workspace that every task of a
// run shares (docs/architecture.md, "The work workspace"): the folder of
// each stage, the path of every file a stage leaves there, and the types
// of the records one stage writes and another stage, or report, reads
// (rendered config and inputs, the prediction's inputs, build and sign
// reports, the rollout timeline and drift diff, the boot image report,
// cause files).
//
// Stage packages (render, kmod, osimage, signing, rollout, bootimage,
// reproduce, report) and the libraries below them import it; it imports
// no stage and nothing that talks to a cluster or a registry, only API
// types and kiln's leaf libraries (trust, nodeimport, safepath,
// termsafe), so reading a record never links a stage.
package work
