package main

import "github.com/kiln-dev/kiln/cmd/cli"

func main() { cli.Main(cli.NewTrigger) }
