//go:build !unix

package pipeline

import (
	"os/exec"
	"time"
)

func setProcessGroup(cmd *exec.Cmd, grace time.Duration) { cmd.WaitDelay = grace }
