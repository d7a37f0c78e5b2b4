//go:build linux

package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCancelledRunStopsStepAndGrandchild: cancelling a run (what SIGINT or
// SIGTERM to the trigger does) stops the step and the process it started,
// even one that ignores SIGTERM, before Run returns.
func TestCancelledRunStopsStepAndGrandchild(t *testing.T) {
	e, _, _ := testExecutor(t)
	pids := filepath.Join(t.TempDir(), "pids")
	e.Env = append(e.Env, "KILN_PIDS="+pids)
	p, err := LoadPipeline(context.Background(), "testdata/exec/pipelines/grandchild.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		waitForPids(t, pids, 10*time.Second)
		cancel()
	}()
	res, err := e.Run(ctx, p, nil, nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "Cancelled" {
		t.Fatalf("run %s, want Cancelled", res.Status)
	}
	for _, pid := range waitForPids(t, pids, 0) {
		if processAlive(pid) {
			t.Errorf("process %d outlived the cancelled run", pid)
		}
	}
}

// waitForPids waits for the helper's "<step pid> <grandchild pid>" file.
func waitForPids(t *testing.T, path string, within time.Duration) []int {
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			var out []int
			for _, f := range strings.Fields(string(b)) {
				n, _ := strconv.Atoi(f)
				out = append(out, n)
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Errorf("no pids in %s after %s", path, within)
			return nil
		}
	}
}

// processAlive: pid exists and is not a zombie (orphans whose new parent
// does not reap stay zombies, and they run nothing).
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}
