// Package step is the plumbing shared by every kiln-steps subcommand: the
// shared options and their sub-options, progress output and the
// subcommand contract (Runner, Streams).
//
// Only the stage packages (render, kmod, osimage, signing, rollout,
// bootimage, reproduce, report), the trigger and cmd/ import it; the
// libraries below them take exit codes from pkg/exitcode, Tekton results
// from pkg/taskresult, the work workspace from pkg/work and registry
// options from pkg/registry (TestNoLibraryImportsStep).
package step
