// Command gen writes the command reference, one Markdown page per command
// of kiln-steps and the trigger plus an index with the exit codes, into
// docs/cli/ (cmd/cli.WriteDocs), and removes pages of commands that no
// longer exist; cmd/cli's TestDocsCLICurrent fails until it ran.
//
//	go run ./cmd/cli/gen [DIR]
package main

import (
	"fmt"
	"os"

	"github.com/kiln-dev/kiln/cmd/cli"
)

func main() {
	dir := cli.DocsDir
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := cli.WriteDocs(dir); err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		os.Exit(1)
	}
}
