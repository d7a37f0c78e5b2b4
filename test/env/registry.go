package env

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Registry is a real OCI registry: Debian's docker-registry (distribution
// 2.8) with filesystem storage in a temporary folder.
type Registry struct {
	// Host is host:port, plain HTTP.
	Host string
	dir  string
	proc *process
}

// RegistryOptions configure StartRegistry.
type RegistryOptions struct {
	// Addr is the IP to bind; empty means 127.0.0.1. Pods need the host's IP.
	Addr string
}

// StartRegistry starts docker-registry on a free port. It is stopped and its
// storage removed when t ends.
func StartRegistry(t testing.TB, o RegistryOptions) *Registry {
	t.Helper()
	r, err := startRegistry(o)
	if err != nil {
		t.Fatalf("starting registry: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Errorf("stopping registry: %v", err)
		}
	})
	return r
}

func startRegistry(o RegistryOptions) (*Registry, error) {
	bin, err := LookTool("docker-registry")
	if err != nil {
		return nil, err
	}
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1"
	}
	port, err := freePort(addr)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kiln-registry-")
	if err != nil {
		return nil, err
	}
	host := net.JoinHostPort(addr, strconv.Itoa(port))
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, filepath.Join(dir, "data"), host)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p, err := startProcess("docker-registry", exec.Command(bin, "serve", cfgPath), filepath.Join(dir, "registry.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &Registry{Host: host, dir: dir, proc: p}
	err = waitFor(p, 20*time.Second, func() error {
		resp, err := http.Get("http://" + host + "/v2/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /v2/: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		_ = r.Stop()
		return nil, err
	}
	return r, nil
}

// Ref returns a reference to repo:tag in this registry.
func (r *Registry) Ref(repoTag string) string { return r.Host + "/" + repoTag }

// Stop stops the registry by PID and removes its storage.
func (r *Registry) Stop() error {
	err := r.proc.stop()
	if rmErr := os.RemoveAll(r.dir); err == nil {
		err = rmErr
	}
	return err
}
