package trigger

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kiln-dev/kiln/test/env"
)

// TestBinaryFailover runs cmd/kiln-trigger as real processes: two replicas
// with leader election, the leader killed with SIGKILL mid-life, the
// standby taking over and acting on the next edit; then a SIGTERM stops
// it cleanly.
func TestBinaryFailover(t *testing.T) {
	bin := env.BuildBinary(t, "./cmd/kiln-trigger")
	h := newHarness(t)
	h.create(pool("worker", true), machineConfig("00-worker", "worker", "a=1"))
	kubeconfig := h.kube.Kubeconfig(t)

	a, aProbe, aMetrics := startTrigger(t, bin, kubeconfig)
	eventually(t, 60*time.Second, "the leader's first run", func() bool { return len(h.runs("worker")) == 1 })
	if code := httpStatus(t, "http://"+aProbe+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	if body := httpBody(t, "http://"+aMetrics+"/metrics"); !strings.Contains(body, `kiln_trigger_runs_created_total{pool="worker",trigger="machineconfig"} 1`) {
		t.Fatalf("/metrics has no created-run count:\n%.2000s", body)
	}
	b, _, _ := startTrigger(t, bin, kubeconfig)
	time.Sleep(2 * time.Second) // b is up and standing by
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.Wait()
	h.setKarg("00-worker", "a=2")
	// The lease (15s) must expire before the standby leads.
	eventually(t, 90*time.Second, "the standby's run after the failover", func() bool { return len(h.runs("worker")) == 2 })
	if live := h.live("worker"); len(live) != 1 || live[0].Labels[LabelFingerprint] != h.expected("worker") {
		t.Fatalf("after the failover: %d live runs", len(live))
	}
	if err := b.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("trigger after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("trigger did not stop within 30s of SIGTERM")
	}
}

func startTrigger(t *testing.T, bin, kubeconfig string) (*exec.Cmd, string, string) {
	t.Helper()
	probe, metrics := freeAddr(t), freeAddr(t)
	var out bytes.Buffer
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--namespace", ns, "--leader-elect", "--settle", "200ms",
		"--health-probe-bind-address", probe, "--metrics-bind-address", metrics)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("trigger %s output (tail):\n%s", probe, tail(out.String(), 3000))
		}
	})
	return cmd, probe, metrics
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func httpStatus(t *testing.T, url string) int {
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func httpBody(t *testing.T, url string) string {
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
