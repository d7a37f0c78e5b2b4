package nodesim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/test/nodesim/internal/importfilter"
)

// Options are the node's ostree behaviour; the zero value is a current
// node (ostree 2024.3+ keeps a layer's /var, no transient root).
type Options struct {
	// FactoryVar moves a derived layer's /var to /usr/share/factory/var,
	// as ostree-ext does for nodes older than ostree 2024.3.
	FactoryVar bool
	// TransientRoot keeps top-level folders other than usr, etc and var
	// (prepare-root.conf's root.transient or composefs).
	TransientRoot bool
	// PAXPathBypassesEtc emulates the ostree-ext versions in which a PAX
	// path record (Go's archive/tar writes one for a name USTAR cannot
	// hold) escapes the etc -> usr/etc move.
	PAXPathBypassesEtc bool
	// rawNames lets a non-UTF-8 name past the filter to ostree (tests).
	rawNames bool
}

// Node is a simulated rpm-ostree node: a sysroot on a tmpfs that real
// ostree deploys images on, inside a user and mount namespace of a helper
// process. A Node is not safe for concurrent use.
type Node struct {
	t    testing.TB
	opts Options
	work string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	base []v1.Hash // the deployed base's layers, by digest
	seq  int
}

// New starts a node with an empty sysroot (ostree admin init-fs and
// os-init). It is stopped when t ends. It fails t when the helper cannot
// start: creating the namespaces needs root or CAP_SYS_ADMIN.
func New(t testing.TB, o Options) *Node {
	t.Helper()
	if _, err := exec.LookPath("ostree"); err != nil {
		t.Fatalf("the node simulation needs Debian's ostree (bash hack/packages.sh installs it): %v", err)
	}
	n := &Node{t: t, opts: o, work: t.TempDir()}
	if err := n.start(); err != nil {
		t.Fatalf("starting the simulated node: %v", err)
	}
	t.Cleanup(n.stop)
	if _, err := n.call(request{Op: "init"}); err != nil {
		t.Fatalf("initialising the simulated node's sysroot: %v", err)
	}
	return n
}

func (n *Node) sysroot() string { return filepath.Join(n.work, "sysroot") }

// start runs the helper in a new user namespace with the first 65536 ids
// mapped to themselves (the files keep their owners) and a new mount
// namespace. When the test process dies the helper reads EOF and exits,
// taking the namespace and its tmpfs with it.
func (n *Node) start() error {
	if err := os.Mkdir(n.sysroot(), 0o700); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the test binary to run as the helper: %w", err)
	}
	ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}}
	n.cmd = exec.Command(exe)
	n.cmd.Env = []string{helperEnv + "=1", sysrootEnv + "=" + n.sysroot(), "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	n.cmd.Stderr = os.Stderr
	n.cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: ids, GidMappings: ids, GidMappingsEnableSetgroups: true,
	}
	return n.pipe()
}

// pipe starts n.cmd with its stdin and stdout as the request channel.
func (n *Node) pipe() error {
	var err error
	if n.in, err = n.cmd.StdinPipe(); err != nil {
		return err
	}
	stdout, err := n.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	n.out = bufio.NewScanner(stdout)
	n.out.Buffer(make([]byte, 64<<10), maxRequest)
	if err := n.cmd.Start(); err != nil {
		return fmt.Errorf("starting the helper in a user and mount namespace (needs root): %w", err)
	}
	return nil
}

func (n *Node) stop() {
	n.in.Close()
	done := make(chan error, 1)
	go func() { done <- n.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			n.t.Errorf("simulated node's helper: %v", err)
		}
	case <-time.After(10 * time.Second):
		n.cmd.Process.Kill()
		<-done
		n.t.Errorf("simulated node's helper did not exit; killed")
	}
}

func (n *Node) call(req request) (response, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return response{}, err
	}
	if _, err := n.in.Write(append(b, '\n')); err != nil {
		return response{}, fmt.Errorf("sending %s to the helper: %w", req.Op, err)
	}
	if !n.out.Scan() {
		return response{}, fmt.Errorf("the helper ended during %s: %v", req.Op, n.out.Err())
	}
	var resp response
	if err := json.Unmarshal(n.out.Bytes(), &resp); err != nil {
		return response{}, fmt.Errorf("reading the helper's answer to %s: %w", req.Op, err)
	}
	if resp.Err != "" {
		return resp, errors.New(resp.Err)
	}
	return resp, nil
}

// Deploy installs base on the empty sysroot, as a first boot from it
// would: its layers are the ostree-encapsulated base (only etc moves to
// usr/etc), its /var fills the stateroot's /var.
func (n *Node) Deploy(base v1.Image) (*View, error) {
	if n.base != nil {
		return nil, errors.New("deploying the base: the node already has a deployment; use Upgrade")
	}
	layers, err := base.Layers()
	if err != nil {
		return nil, fmt.Errorf("deploying the base: reading its layers: %w", err)
	}
	start := time.Now()
	files, _, err := n.writeLayers(layers, importfilter.Config{Base: true})
	if err != nil {
		return nil, fmt.Errorf("deploying the base: %w", err)
	}
	if _, err := n.call(request{Op: "import", Layers: files, Ref: "base"}); err != nil {
		return nil, fmt.Errorf("deploying the base: %w", err)
	}
	if _, err := n.call(request{Op: "deploy", Ref: "base", FirstInstall: true}); err != nil {
		return nil, fmt.Errorf("deploying the base: %w", err)
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return nil, err
		}
		n.base = append(n.base, d)
	}
	return n.view(time.Since(start), nil)
}

// Upgrade imports img as ostree-ext imports a derived image (its layers
// after the base's filtered, committed and merged over the base) and
// deploys it, as `rpm-ostree rebase` followed by a reboot would. img must
// be built on the deployed base.
func (n *Node) Upgrade(img v1.Image) (*View, error) {
	if n.base == nil {
		return nil, errors.New("upgrading: the node has no deployment; Deploy a base first")
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("upgrading: reading the image's layers: %w", err)
	}
	if err := n.checkBase(layers); err != nil {
		return nil, err
	}
	start := time.Now()
	cfg := importfilter.Config{FactoryVar: n.opts.FactoryVar, AllowNonUsr: n.opts.TransientRoot, PAXPathBypass: n.opts.PAXPathBypassesEtc,
		KeepNonUTF8: n.opts.rawNames}
	files, dropped, err := n.writeLayers(layers[len(n.base):], cfg)
	if err != nil {
		return nil, fmt.Errorf("upgrading: %w", err)
	}
	n.seq++
	ref := fmt.Sprintf("image-%d", n.seq)
	if _, err := n.call(request{Op: "import", Base: "base", Layers: files, Ref: ref}); err != nil {
		return nil, fmt.Errorf("upgrading: importing the image: %w", err)
	}
	if _, err := n.call(request{Op: "deploy", Ref: ref}); err != nil {
		return nil, fmt.Errorf("upgrading: deploying the image: %w", err)
	}
	return n.view(time.Since(start), dropped)
}

func (n *Node) checkBase(layers []v1.Layer) error {
	if len(layers) < len(n.base) {
		return fmt.Errorf("upgrading: the image has %d layers, fewer than the base's %d", len(layers), len(n.base))
	}
	for i, want := range n.base {
		d, err := layers[i].Digest()
		if err != nil {
			return err
		}
		if d != want {
			return fmt.Errorf("upgrading: the image's layer %d is %s, not the deployed base's %s", i, d, want)
		}
	}
	return nil
}

// writeLayers filters each layer into a tar file of the work folder.
func (n *Node) writeLayers(layers []v1.Layer, cfg importfilter.Config) ([]string, map[string]int, error) {
	dropped := map[string]int{}
	var files []string
	for i, l := range layers {
		n.seq++
		name := filepath.Join(n.work, fmt.Sprintf("layer-%d.tar", n.seq))
		d, err := filterLayerToFile(l, name, cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("layer %d: %w", i, err)
		}
		for k, v := range d {
			dropped[k] += v
		}
		files = append(files, name)
	}
	return files, dropped, nil
}

func filterLayerToFile(l v1.Layer, name string, cfg importfilter.Config) (map[string]int, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, fmt.Errorf("reading layer: %w", err)
	}
	defer rc.Close()
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	d, err := importfilter.Filter(rc, f, cfg)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return d, err
}

// EditEtc writes a file into the booted deployment's /etc, as Ignition on
// first boot or an administrator would: ostree keeps it over an upgrade
// when it differs from the old image's copy.
func (n *Node) EditEtc(p string, data []byte, mode fs.FileMode) error {
	if path.Clean(p) != p || !path.IsAbs(p) || len(p) < len("/etc/x") || p[:5] != "/etc/" {
		return fmt.Errorf("editing %q: the path must be a clean one under /etc", p)
	}
	return n.WriteFile(p, data, mode, 0, 0)
}

// WriteFile writes a file under /etc or /var of the booted deployment.
func (n *Node) WriteFile(p string, data []byte, mode fs.FileMode, uid, gid int) error {
	n.seq++
	src := filepath.Join(n.work, fmt.Sprintf("write-%d", n.seq))
	if err := os.WriteFile(src, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	defer os.Remove(src)
	_, err := n.call(request{Op: "write", Path: p, Src: src, Mode: uint32(mode.Perm()) | setBits(mode), UID: uid, GID: gid})
	return err
}

// Symlink makes a symlink under /etc or /var of the booted deployment.
func (n *Node) Symlink(p, target string) error {
	_, err := n.call(request{Op: "write", Path: p, Link: target})
	return err
}

func setBits(m fs.FileMode) uint32 {
	var b uint32
	if m&fs.ModeSetuid != 0 {
		b |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		b |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		b |= 0o1000
	}
	return b
}

// View reads the booted deployment's tree as the node sees it.
func (n *Node) View() (*View, error) { return n.view(0, nil) }

func (n *Node) view(took time.Duration, dropped map[string]int) (*View, error) {
	n.seq++
	out := filepath.Join(n.work, fmt.Sprintf("export-%d.tar", n.seq))
	defer os.Remove(out)
	resp, err := n.call(request{Op: "export", Out: out})
	if err != nil {
		return nil, fmt.Errorf("reading the deployment: %w", err)
	}
	v, err := readView(out)
	if err != nil {
		return nil, err
	}
	v.Kernel, v.Took, v.Dropped = resp.Kernel, took, maps.Clone(dropped)
	return v, nil
}
