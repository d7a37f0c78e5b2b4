// Command gen rewrites README's "Command line" section from the commands
// (cmd/cli.Markdown); cmd/cli's TestREADMECommandLine fails until it ran.
//
//	go run ./cmd/cli/gen [README.md]
package main

import (
	"fmt"
	"os"

	"github.com/kiln-dev/kiln/cmd/cli"
)

func main() {
	path := "README.md"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	if err := cli.UpdateREADME(path); err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		os.Exit(1)
	}
}
