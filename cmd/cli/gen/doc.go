// Command gen writes the command reference, one Markdown page per command
// of kiln-steps, the trigger and kiln-image-build plus an index with the exit codes, into
// docs/cli/ (cmd/cli.WriteDocs), and removes pages of commands that no
// longer exist; cmd/cli's TestDocsCLICurrent fails until it ran.
//
//	go run ./cmd/cli/gen [DIR]
package main
