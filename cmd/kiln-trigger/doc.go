// Command kiln-trigger starts kiln's pipelines when node configuration changes:
// in a cluster it is a controller; with --source dir:PATH --once it runs the
// pipeline locally on a directory of manifests (cmd/cli).
package main
