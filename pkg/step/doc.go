// Package step is the plumbing shared by every kiln-steps subcommand: the
// shared options and their sub-options, the Tekton result writer, the work
// workspace layout, progress output and the subcommand dispatcher.
package step
