//go:build unix

package pipeline

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// init turns this process into a watchdog when the executor started it as
// one; it never returns then. The variable is removed from the watchdog's
// environment so that nothing it could start inherits it.
func init() {
	v, ok := os.LookupEnv(watchdogEnv)
	if !ok {
		return
	}
	_ = os.Unsetenv(watchdogEnv)
	grace, err := time.ParseDuration(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kiln watchdog: %s=%q: %v\n", watchdogEnv, v, err)
		os.Exit(2)
	}
	os.Exit(watchdogMain(os.Stdin, grace))
}

// watchdogMain reads "+PGID" (a step started) and "-PGID" (its group is
// gone) until end of input, then stops every group still listed: a
// closed pipe with groups listed means the executor died mid-step.
func watchdogMain(in io.Reader, grace time.Duration) int {
	// A terminal's Ctrl-C or hangup must not end the watchdog before
	// the steps it guards.
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP)
	groups := map[int]bool{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		groups[pgid] = line[0] == '+'
	}
	var wg sync.WaitGroup
	for pgid, live := range groups {
		if live {
			wg.Add(1)
			go func() { defer wg.Done(); stopGroup(pgid, grace) }()
		}
	}
	wg.Wait()
	return 0
}

// startWatchdog starts this executable as the run's watchdog.
func startWatchdog(grace time.Duration) (*watchdog, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this executable: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), watchdogEnv+"="+grace.String())
	cmd.Stdin, cmd.Stderr = r, os.Stderr
	// Its own group: signals meant for this process's group (a
	// terminal's Ctrl-C) leave it running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = w.Close()
		return nil, err
	}
	return &watchdog{w: w, cmd: cmd}, nil
}
