// Package render is the render stage (kiln-steps render): it reads a
// pool's objects from a folder of manifests or from the cluster
// (source.go), renders the pool with MCO's rules (pkg/mcrender), and
// writes rendered.json, inputs.json, mco-inputs.json and the stage's
// results (step.go). Nothing is written unless every check passed.
//
// Remote sources are the stage's part of the render (kiln's deliberate
// difference from MCO, pkg/mcrender's doc): Fetcher, as the engine's
// mcrender.Sources, fetches every http(s) file, append, CA and config
// reference, checks each verification.hash over the decompressed bytes
// and embeds the content as a data: URL (snapshot.go, remote.go), within
// a size cap and a deadline per source and per render.
//
// cmd/ and tests import this package; no other stage may. Code that
// another stage needs belongs in a library below the stages (MCO's
// rendering is pkg/mcrender). pkg/rollout and pkg/trigger still call
// LoadDir to read a folder of manifests, until the stages share one way
// to load their sources.
package render
