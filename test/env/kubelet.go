package env

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kubeletConfig keeps the kubelet to this node's folder and cgroup, and
// off the host's disk and image garbage policies: the imported images
// cannot be pulled again, so image GC is off, and disk-pressure eviction
// only triggers on a truly full disk.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupRoot: %[4]s
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%[5]s
podLogsDir: %[6]s/logs
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 1Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
  imagefs.inodesFree: 1%%
serializeImagePulls: false
`

func (n *Node) startKubelet(kubeconfig string) error {
	ports := make([]int, 2)
	for i := range ports {
		p, err := freePort(n.ip)
		if err != nil {
			return err
		}
		ports[i] = p
	}
	if err := makeCgroups(n.cgroup); err != nil {
		return err
	}
	cfg := fmt.Sprintf(kubeletConfig, n.ip, ports[0], ports[1], n.cgroup, n.sock, n.dir)
	path := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return err
	}
	p, err := n.run("kubelet", "--config="+path, "--kubeconfig="+kubeconfig,
		"--root-dir="+filepath.Join(n.dir, "kubelet"), "--hostname-override="+n.name, "--node-ip="+n.ip)
	if err != nil {
		return err
	}
	return n.waitReady(p)
}

// stop tears the node down so that nothing outlives the test: pods are
// deleted through the apiserver so the kubelet stops them and frees their
// network namespaces, any container left is killed, then the servers stop,
// and the node's mounts, cgroups, bridge and folder go.
func (n *Node) stop(t testing.TB) {
	var errs []error
	// The scheduler and controller-manager first: a Deployment's pods would
	// otherwise come back as fast as drain deletes them.
	var rest []*process
	for _, p := range n.procs {
		if p.name == "kube-scheduler" || p.name == "kube-controller-manager" {
			errs = append(errs, p.stop())
		} else {
			rest = append(rest, p)
		}
	}
	if len(rest) > 0 {
		errs = append(errs, n.drain())
	}
	n.killContainers()
	for i := len(rest) - 1; i >= 0; i-- {
		errs = append(errs, rest[i].stop())
	}
	n.killShims()
	errs = append(errs, unmountUnder(n.dir))
	removeCgroups(n.cgroup)
	_ = exec.Command("ip", "link", "delete", n.bridge).Run()
	errs = append(errs, os.RemoveAll(n.dir))
	if err := errors.Join(errs...); err != nil {
		t.Errorf("stopping node %s: %v", n.name, err)
	}
}

// drain deletes every pod bound to this node and waits, briefly, until
// the kubelet has stopped them.
func (n *Node) drain() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := n.kube.Client
	zero := int64(0)
	for ctx.Err() == nil {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods); err != nil {
			return nil // the apiserver is gone: killContainers does the rest
		}
		left := 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName != n.name {
				continue
			}
			left++
			_ = c.Delete(ctx, p, &client.DeleteOptions{GracePeriodSeconds: &zero})
		}
		if left == 0 {
			if out, err := n.ctr("tasks", "ls", "-q"); err != nil || strings.TrimSpace(out) == "" {
				return nil
			}
		}
		time.Sleep(time.Second)
	}
	return nil
}

// killContainers SIGKILLs the init process of every container still
// running: its PID namespace then dies with it.
func (n *Node) killContainers() {
	out, err := n.ctr("tasks", "ls")
	if err != nil {
		return
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		if pid, err := strconv.Atoi(f[1]); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// killShims ends the containerd shims of this node, which containerd
// starts outside its own process group.
func (n *Node) killShims() {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") || !slices.Contains(args, n.sock) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// unmountUnder lazily unmounts every mount point below dir, deepest first.
func unmountUnder(dir string) error {
	mounts := mountsUnder(dir)
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// makeCgroups creates the kubelet's cgroupRoot in every v1 hierarchy
// (the kubelet wants it to exist); a v1 cpuset starts with no CPUs or
// memory nodes, so it gets its parent's.
func makeCgroups(root string) error {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hierarchies {
		if st, err := os.Stat(h); err != nil || !st.IsDir() || h == "/sys/fs/cgroup/unified" {
			continue
		}
		dir := filepath.Join(h, root)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		if filepath.Base(h) != "cpuset" {
			continue
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			b, err := os.ReadFile(filepath.Join(h, f))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				return fmt.Errorf("setting %s of cgroup %s: %w", f, dir, err)
			}
		}
	}
	return nil
}

// removeCgroups removes the node's cgroup tree in every v1 hierarchy (or
// the v2 one), deepest first; cgroups with a process left stay.
func removeCgroups(root string) {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	hierarchies = append(hierarchies, "/sys/fs/cgroup")
	for _, h := range hierarchies {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = syscall.Rmdir(dirs[i])
		}
	}
}
