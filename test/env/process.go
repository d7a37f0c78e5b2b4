package env

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// process is a server a test started: stopped by PID, its folder removed.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

func startProcess(name string, cmd *exec.Cmd, logPath string) (*process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group, so that a stop reaches any children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); logf.Close() }()
	return p, nil
}

// stop sends SIGTERM to the process group, then SIGKILL after a grace period.
func (p *process) stop() error {
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit", p.name, pid)
	}
}

// exited reports whether the process has ended, for error messages.
func (p *process) exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// logTail returns the end of the process log, for error messages.
func (p *process) logTail() string { return fileTail(p.log, 2000) }

// fileTail returns the last n bytes of a log file, or "" when unreadable.
func fileTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// portClashAttempts bounds the starts of a server whose port was taken.
// freePort's port is free when asked, but until the server binds it any
// other process may take it: the kernel hands the same ephemeral range to
// outgoing connections, and CI runs many packages' servers at once.
const portClashAttempts = 3

// retryPortClash runs start, which picks its ports afresh each time, again
// when the server it started exited because a port was in use. Any other
// error ends it at once.
func retryPortClash[T any](start func() (T, error)) (T, error) {
	var (
		v   T
		err error
	)
	for i := 0; i < portClashAttempts; i++ {
		if v, err = start(); err == nil || !strings.Contains(err.Error(), "address already in use") {
			return v, err
		}
	}
	return v, fmt.Errorf("%d starts, each found a port taken: %w", portClashAttempts, err)
}

// freePort asks the kernel for a free TCP port on host.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freeMetricsPort is freePort for knative's METRICS_PROMETHEUS_PORT, which
// it parses as a 16-bit signed integer: the kernel's ephemeral ports
// (32768 and up) are "out of range" there, so one below is taken.
func freeMetricsPort() (int, error) {
	for port := 20000 + os.Getpid()%10000; port < 32768; port++ {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free port below 32768")
}

// startKnativeController starts a controller built on knative's
// sharedmain, from the command that command makes (with fresh ports each
// call), stopped when t ends, and waits until it logs that its informers
// synced and its reconcilers start.
func startKnativeController(t testing.TB, name string, command func() (*exec.Cmd, error)) (*process, error) {
	return retryPortClash(func() (*process, error) {
		cmd, err := command()
		if err != nil {
			return nil, err
		}
		return startKnativeOnce(t, name, cmd)
	})
}

func startKnativeOnce(t testing.TB, name string, cmd *exec.Cmd) (*process, error) {
	p, err := startProcess(name, cmd, filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("stopping %s: %v", name, err)
		}
	})
	return p, waitFor(p, 60*time.Second, func() error { return logHas(p, "Starting controllers") })
}

// knativePortsEnv is the environment of a knative sharedmain controller's
// metrics and profiling ports, both free.
func knativePortsEnv() ([]string, error) {
	metrics, err := freeMetricsPort()
	if err != nil {
		return nil, err
	}
	profiling, err := freePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	return []string{fmt.Sprintf("METRICS_PROMETHEUS_PORT=%d", metrics), fmt.Sprintf("PROFILING_PORT=%d", profiling)}, nil
}

// waitFor polls ready until it returns nil, the process exits, or timeout.
func waitFor(p *process, timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if last = ready(); last == nil {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("%s exited: %s", p.name, p.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.Join(fmt.Errorf("%s not ready after %s: %s", p.name, timeout, p.logTail()), last)
}
