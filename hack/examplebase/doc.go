// Command examplebase pushes the sample cluster's images (examples package:
// RHCOS base, extensions, release) to the registry at examples.Registry, or
// with --print only prints their references. `make run` calls it before
// the trigger reads examples/cluster.
package main
