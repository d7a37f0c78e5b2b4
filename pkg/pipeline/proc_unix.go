//go:build unix

package pipeline

import (
	"errors"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// groupPoll is how often a group being stopped is checked for members.
const groupPoll = 50 * time.Millisecond

// startStep starts a step the way a pod's container runs: in its own
// process group, so that stopping it stops what it started (buildah,
// cosign, their children), and with a parent-death signal, so that it does
// not outlive this process when it is killed outright.
//
// The parent-death signal is sent when the thread that forked the child
// exits, not the process (go.dev/issue/27505): the calling goroutine is
// locked to its thread until the step has been waited for, so the Go
// runtime cannot retire that thread under a live step. The caller must
// call the returned wait in the same goroutine.
func startStep(cmd *exec.Cmd, grace time.Duration, wd *watchdog) (wait func() error, err error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
	// Cancel only asks the group to stop; the leader's exit (or Go's
	// SIGKILL after WaitDelay) ends Wait, and stopGroup then sees to the
	// rest of the group.
	cmd.Cancel = func() error { return signalGroup(cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = grace
	runtime.LockOSThread()
	if err := cmd.Start(); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	pgid := cmd.Process.Pid
	wd.watch(pgid)
	return func() error {
		defer runtime.UnlockOSThread()
		err := cmd.Wait()
		// A container's processes end with it: what the step left
		// running in its group is stopped too. The group's id cannot be
		// reused while it has members, so signalling it is safe.
		wd.stopping.Add(1)
		go func() {
			defer wd.stopping.Done()
			stopGroup(pgid, grace)
			wd.release(pgid)
		}()
		return err
	}, nil
}

// stopGroup sends SIGTERM to a process group that still has members and
// SIGKILL to whatever is left of it after grace.
func stopGroup(pgid int, grace time.Duration) {
	if !groupAlive(pgid) {
		return
	}
	_ = signalGroup(pgid, syscall.SIGTERM)
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); time.Sleep(groupPoll) {
		if !groupAlive(pgid) {
			return
		}
	}
	_ = signalGroup(pgid, syscall.SIGKILL)
	// SIGKILL is delivered asynchronously: wait, briefly, until the
	// group is gone, so that a stopped run has really stopped.
	for deadline := time.Now().Add(time.Second); groupAlive(pgid) && time.Now().Before(deadline); {
		time.Sleep(groupPoll / 5)
	}
}

func signalGroup(pgid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// groupAlive: the group has a member that is not a zombie waiting for a
// parent (in a container whose init does not reap, orphans stay zombies).
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	return groupHasLiveMember(pgid)
}
