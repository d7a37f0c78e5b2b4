// Command trigger starts kiln's pipelines when node configuration changes:
// in a cluster it is a controller; with --source dir:PATH --once it runs the
// pipeline locally on a directory of manifests.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/pkg/trigger"
)

func main() {
	var o trigger.Options
	fs := pflag.NewFlagSet("trigger", pflag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "trigger: start kiln pipelines when node configuration changes\n\nUsage: trigger [flags]\n\nFlags:\n%s", fs.FlagUsages())
	}
	o.AddFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := trigger.Run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "trigger: %v\n", err)
		os.Exit(1)
	}
}
