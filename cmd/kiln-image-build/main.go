package main

import (
	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/cmd/cli/imagebuildcmd"
)

func main() { base.Main(imagebuildcmd.NewRoot) }
