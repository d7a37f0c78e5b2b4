package base

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// helperEnv makes the test binary a stand-in step (signalHelper) instead
// of running the tests.
const helperEnv = "KILN_CLI_SIGNAL_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(signalHelper(mode))
	}
	os.Exit(m.Run())
}

// signalHelper is a step that says "ready" once its signal handling is in
// place, then blocks: "fifo" in the open of a FIFO that has no writer
// (a read no context reaches), "context" until its context is cancelled.
// The grace is KILN_CLI_SIGNAL_GRACE.
func signalHelper(mode string) int {
	grace, _ := time.ParseDuration(os.Getenv("KILN_CLI_SIGNAL_GRACE"))
	root := &cobra.Command{Use: "step", SilenceUsage: true, SilenceErrors: true, RunE: func(cmd *cobra.Command, _ []string) error {
		fmt.Println("ready")
		if mode == "context" {
			<-cmd.Context().Done()
			return &ranError{fmt.Errorf("stopped: %w", cmd.Context().Err())}
		}
		f, err := os.Open(os.Getenv("KILN_CLI_SIGNAL_FIFO"))
		if err == nil {
			f.Close()
		}
		return errors.New("the FIFO was opened")
	}}
	return runUntilSignalled(root, nil, os.Stdout, os.Stderr, grace)
}

// TestStepBlockedInIOEndsOnSIGTERM runs a step blocked opening a FIFO
// without a writer, or waiting on its context, in a child process, signals
// it and checks it ends at once with the conventional code: 143 (SIGTERM)
// or 130 (SIGINT) after the grace or at a second signal when blocked, and
// its own code when it returns on cancellation.
func TestStepBlockedInIOEndsOnSIGTERM(t *testing.T) {
	tests := []struct {
		name     string
		mode     string
		grace    time.Duration
		signals  []syscall.Signal
		wantCode int
		wantErr  string
	}{
		{"FIFO, grace passes", "fifo", 300 * time.Millisecond, []syscall.Signal{syscall.SIGTERM}, 143, "step: received terminated and did not stop within 300ms; exiting"},
		{"FIFO, second SIGTERM", "fifo", time.Hour, []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}, 143, "step: received terminated again; exiting"},
		{"FIFO, SIGINT", "fifo", 300 * time.Millisecond, []syscall.Signal{syscall.SIGINT}, 130, "step: received interrupt and did not stop within 300ms; exiting"},
		{"context honoured", "context", time.Hour, []syscall.Signal{syscall.SIGTERM}, 1, "step: stopped: context canceled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "in.yaml")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), helperEnv+"="+tc.mode, "KILN_CLI_SIGNAL_FIFO="+fifo, "KILN_CLI_SIGNAL_GRACE="+tc.grace.String())
			var errw bytes.Buffer
			cmd.Stderr = &errw
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
				t.Fatalf("helper did not start: %q, %v; %s", line, err, errw.String())
			}
			time.Sleep(50 * time.Millisecond) // into the blocking open
			start := time.Now()
			for _, sig := range tc.signals {
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(2 * time.Second):
				t.Fatalf("still running 2s after %v", tc.signals)
			}
			t.Logf("ended %s after the first signal", time.Since(start))
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("helper ended with %v, want exit code %d", err, tc.wantCode)
			}
			if got := exit.ExitCode(); got != tc.wantCode {
				t.Errorf("exit code %d, want %d (%v)", got, tc.wantCode, err)
			}
			if got := strings.TrimSpace(errw.String()); got != tc.wantErr {
				t.Errorf("stderr %q, want %q", got, tc.wantErr)
			}
		})
	}
}
