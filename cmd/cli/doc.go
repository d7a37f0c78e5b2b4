// Package cli holds the command trees of kiln's two binaries, kiln-steps
// and kiln-trigger, on cobra. cmd/kiln-steps and cmd/kiln-trigger only
// call Main; tests
// outside cmd/ (examples/, test/install, external test packages) run
// exactly what the binaries run through Execute.
//
// Flag parsing lives here and nowhere under pkg/: each subcommand binds
// the flags of one pkg/ options struct (with the struct's defaults, or an
// environment variable's value, as the flag's default), calls the
// struct's Validate before any I/O, then its Run.
//
// The machinery of a stage's subcommand and of a root (flags shared by
// stages, help, version, exit codes, signals) is cmd/cli/base, and the
// image-build command is cmd/cli/imagebuildcmd: neither imports another
// stage, so cmd/kiln-image-build links only what image-build runs.
package cli
