package pipeline

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
)

// watchdog keeps a run's steps from outliving the executor. It is a child
// process (this same executable, see watchdogEnv) in its own process group
// that reads the process groups of running steps from a pipe; the pipe's
// write end lives only in this process, so the kernel closes it when this
// process dies, however it dies, and the watchdog then stops every group
// still listed. A parent-death signal alone reaches only the step itself,
// not what it started.
type watchdog struct {
	mu  sync.Mutex
	w   *os.File // nil: no watchdog (platforms without process groups)
	cmd *exec.Cmd
	// stopping counts step groups still being stopped after their
	// leader exited; stop waits for them.
	stopping sync.WaitGroup
}

// watchdogEnv starts this executable as a watchdog instead of its own
// program (see init): every binary that runs the executor links this
// package, so the executor can start a copy of its own binary.
const watchdogEnv = "KILN_PIPELINE_WATCHDOG_GRACE"

func (wd *watchdog) send(format string, pgid int) {
	if wd == nil || wd.w == nil {
		return
	}
	wd.mu.Lock()
	defer wd.mu.Unlock()
	// A failed write means the watchdog is gone; the parent-death
	// signal and the executor's own stopping still apply.
	_, _ = fmt.Fprintf(wd.w, format, pgid)
}

func (wd *watchdog) watch(pgid int)   { wd.send("+%d\n", pgid) }
func (wd *watchdog) release(pgid int) { wd.send("-%d\n", pgid) }

// stop waits for the step groups being stopped, then ends the watchdog
// with nothing left to watch.
func (wd *watchdog) stop() {
	wd.stopping.Wait()
	if wd.w == nil {
		return
	}
	_ = wd.w.Close()
	_ = wd.cmd.Wait()
}
