// Command pause is the sandbox ("infra") container of the test node's
// pods, written in Go for the same job as Kubernetes' pause.c: hold the
// pod's namespaces, reap orphaned children as PID 1, and exit on
// SIGTERM/SIGINT. Built and imported by test/env, so no image is pulled.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
