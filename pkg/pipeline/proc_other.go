//go:build !unix

package pipeline

import (
	"os/exec"
	"time"
)

// startStep: without process groups a cancelled step is killed alone.
func startStep(cmd *exec.Cmd, grace time.Duration, _ *watchdog) (func() error, error) {
	cmd.WaitDelay = grace
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return cmd.Wait, nil
}

// startWatchdog: there are no process groups to watch here.
func startWatchdog(time.Duration) (*watchdog, error) { return &watchdog{}, nil }
