package env

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Proxy is a real forward HTTP proxy: Debian's tinyproxy on loopback. Its
// log records every request it forwards, which Requests counts.
type Proxy struct {
	// URL is http://127.0.0.1:port, for HTTP_PROXY and HTTPS_PROXY.
	URL  string
	dir  string
	proc *process
}

// StartProxy starts tinyproxy on a free loopback port; it is stopped and its
// folder removed when t ends. Go sends nothing for localhost or 127.0.0.1
// through a proxy, so the servers behind it must be addressed otherwise
// (HostIP).
func StartProxy(t testing.TB) *Proxy {
	t.Helper()
	p, err := startProxy()
	if err != nil {
		t.Fatalf("starting proxy: %v", err)
	}
	t.Cleanup(func() {
		err := p.proc.stop()
		if rmErr := os.RemoveAll(p.dir); err == nil {
			err = rmErr
		}
		if err != nil {
			t.Errorf("stopping proxy: %v", err)
		}
	})
	return p
}

func startProxy() (*Proxy, error) {
	bin, err := LookTool("tinyproxy")
	if err != nil {
		return nil, err
	}
	port, err := freePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kiln-proxy-")
	if err != nil {
		return nil, err
	}
	// No ConnectPort line: CONNECT (HTTPS) is allowed to every port.
	cfg := fmt.Sprintf(`Port %d
Listen 127.0.0.1
Timeout 60
LogFile %q
LogLevel Info
PidFile %q
MaxClients 50
DisableViaHeader Yes
`, port, filepath.Join(dir, "tinyproxy.log"), filepath.Join(dir, "tinyproxy.pid"))
	cfgPath := filepath.Join(dir, "tinyproxy.conf")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	proc, err := startProcess("tinyproxy", exec.Command(bin, "-d", "-c", cfgPath), filepath.Join(dir, "stdout.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	p := &Proxy{URL: "http://" + addr, dir: dir, proc: proc}
	err = waitFor(proc, 20*time.Second, func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})
	if err != nil {
		_ = proc.stop()
		os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

// Requests counts the requests the proxy was asked to forward to host
// (host:port): plain-HTTP requests and HTTPS tunnels (CONNECT) alike.
func (p *Proxy) Requests(host string) (int, error) {
	b, err := os.ReadFile(filepath.Join(p.dir, "tinyproxy.log"))
	if err != nil {
		return 0, fmt.Errorf("reading the proxy log: %w", err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		_, req, ok := strings.Cut(line, "]: Request (file descriptor ")
		if !ok {
			continue
		}
		// "5): GET http://host/v2/ HTTP/1.1" or "5): CONNECT host HTTP/1.1"
		fields := strings.Fields(req)
		if len(fields) >= 3 && (fields[2] == host || strings.HasPrefix(fields[2], "http://"+host+"/")) {
			n++
		}
	}
	return n, nil
}

// Log returns the end of the proxy's log, for failure messages.
func (p *Proxy) Log() string {
	return fileTail(filepath.Join(p.dir, "tinyproxy.log"), 4000)
}
