//go:build unix

package pipeline

import (
	"os/exec"
	"syscall"
	"time"
)

// setProcessGroup makes a cancelled step stop like a pod's container does:
// SIGTERM to the step's whole process group (buildah, cosign children),
// then SIGKILL after grace.
func setProcessGroup(cmd *exec.Cmd, grace time.Duration) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = grace
}
