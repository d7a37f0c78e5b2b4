// Command kiln-steps is the multi-call binary behind every step of kiln's
// Tekton Tasks: one subcommand per stage (cmd/cli).
package main
