package base

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// StopGrace is how long a step has to return once SIGTERM or SIGINT has
// cancelled its context. A step blocked in a read that no context reaches
// (a FIFO, a hung NFS file) never returns: after the grace, or at a second
// signal, the process exits anyway, well within Kubernetes' default 30 s
// termination grace period, so a cancelled TaskRun's pod ends without
// waiting for SIGKILL.
const StopGrace = 5 * time.Second

// runUntilSignalled runs root with args and returns the exit code to exit
// with: the command's own when it returns, else 128+N for signal N (the
// shell's convention: 143 for SIGTERM, 130 for SIGINT) when it has not
// returned grace after the first signal, or at the second.
func runUntilSignalled(root *cobra.Command, args []string, out, errw io.Writer, grace time.Duration) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan int, 1)
	go func() { done <- Execute(ctx, root, args, out, errw) }()
	var sig os.Signal
	select {
	case code := <-done:
		return code
	case sig = <-sigs:
	}
	cancel(fmt.Errorf("received %s", sig))
	select {
	case code := <-done:
		return code
	case <-time.After(grace):
		fmt.Fprintf(errw, "%s: received %s and did not stop within %s; exiting\n", root.Name(), sig, grace)
	case again := <-sigs:
		fmt.Fprintf(errw, "%s: received %s again; exiting\n", root.Name(), again)
	}
	return 128 + signalNumber(sig)
}

func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return int(syscall.SIGTERM)
}
