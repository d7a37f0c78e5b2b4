// Package base is the command machinery every kiln binary shares: a
// stage's subcommand (NewStage: flags, Validate before any I/O, Run, the
// failure cause recorded in the work workspace), the flags common to
// stages (BindOptions, BindRegistry, BindIdentity, environment defaults),
// the root's help, version and exit codes (SetupRoot, BindGlobal,
// Execute) and the signal handling of Main.
//
// It imports no stage package and no Kubernetes client, so a binary that
// runs one stage (cmd/kiln-image-build) links only that stage's
// libraries. Only cmd/ packages may import it.
package base
