// Package localrun is kiln-trigger's local mode, `--source dir:PATH`
// (docs/local-mode.md): it fingerprints the pools of a manifests folder as
// the cluster trigger does (pkg/trigger), runs the node-image pipeline
// with the local executor for each pool whose inputs changed since its
// last successful run, under a lock on the output folder, with keys kept
// and reused across runs, and leaves the GitOps change in the output
// folder.
//
// cmd/ calls Run; it imports the trigger and library packages and no
// stage package.
package localrun
