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
