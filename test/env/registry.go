package env

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Registry is a real OCI registry: Debian's docker-registry (distribution
// 2.8) with filesystem storage in a temporary folder.
type Registry struct {
	// Host is host:port, plain HTTP unless RegistryOptions.TLS.
	Host string
	// CA is the certificate to trust when TLS is on; nil otherwise.
	CA   *x509.CertPool
	dir  string
	proc *process
}

// RegistryOptions configure StartRegistry.
type RegistryOptions struct {
	// Addr is the IP to bind; empty means 127.0.0.1. Pods need the host's IP.
	Addr string
	// TLS serves HTTPS with a fresh self-signed certificate for Addr;
	// Registry.Transport trusts it. Off by default: plain HTTP.
	TLS bool
	// Users turns on htpasswd (bcrypt) basic auth with these
	// user → password pairs. Empty by default: no auth.
	Users map[string]string
}

// StartRegistry starts docker-registry on a free port. It is stopped and its
// storage removed when t ends.
func StartRegistry(t testing.TB, o RegistryOptions) *Registry {
	t.Helper()
	r, err := retryPortClash(func() (*Registry, error) { return startRegistry(o) })
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
	extra, ca, err := secureConfig(dir, addr, o)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cfg += extra
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Env = registryEnv(os.Environ())
	p, err := startProcess("docker-registry", cmd, filepath.Join(dir, "registry.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &Registry{Host: host, CA: ca, dir: dir, proc: p}
	scheme := "http"
	if o.TLS {
		scheme = "https"
	}
	client := &http.Client{Transport: r.Transport()}
	err = waitFor(p, 20*time.Second, func() error {
		resp, err := client.Get(scheme + "://" + host + "/v2/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		// With auth on, an anonymous /v2/ answers 401: the registry is up.
		if resp.StatusCode != http.StatusOK && !(len(o.Users) > 0 && resp.StatusCode == http.StatusUnauthorized) {
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

// registryEnv is env without REGISTRY_* variables: docker-registry reads
// them as overrides of its config file, so a REGISTRY_AUTH_FILE meant for
// podman or kiln (even empty) would replace the registry's own auth.
func registryEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "REGISTRY_") {
			out = append(out, kv)
		}
	}
	return out
}
