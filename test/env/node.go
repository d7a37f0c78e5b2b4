package env

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HostIP is this machine's address that pods reach it on: the source
// address of its default route. Servers a pod talks to (apiserver,
// registry) bind it, because 127.0.0.1 inside a pod is the pod.
func HostIP(t testing.TB) string {
	t.Helper()
	// A UDP "connection" sends nothing; it only asks the kernel for a route.
	conn, err := net.Dial("udp", "192.0.2.255:9")
	if err == nil {
		defer conn.Close()
		if ip := conn.LocalAddr().(*net.UDPAddr).IP; !ip.IsLoopback() {
			return ip.String()
		}
	}
	t.Fatalf("finding the host's IP for pods: no route off loopback (%v)", err)
	return ""
}

// NodeOptions configure StartNode.
type NodeOptions struct {
	// Name is the Node's name; default kiln-e2e-node.
	Name string
	// PodSubnet is the CIDR the node's bridge hands pod IPs from; default
	// a free 10.244.X.0/24 (clear of podman's 10.88.0.0/16), reserved for
	// the node's life so that two nodes (two test packages) never share one.
	PodSubnet string
	// PlainHTTPRegistries are host:port registries the node's containerd
	// pulls from over plain HTTP (a hosts.toml each, containerd's
	// https://github.com/containerd/containerd/blob/main/docs/hosts.md).
	PlainHTTPRegistries []string
}

// Node is one real Kubernetes node next to a Kube: Debian's containerd and
// runc, a CNI bridge, a kubelet, plus the kube-scheduler and
// kube-controller-manager a control plane needs to run pods. There is no
// kube-proxy: Service IPs do not route, so pods that talk to the apiserver
// get KUBERNETES_SERVICE_HOST/PORT (Kube.HostPort) and the apiserver binds
// the host IP. Everything stops, and the node's folder is removed, when the
// test ends.
type Node struct {
	name   string
	dir    string
	sock   string
	ip     string
	bridge string
	cgroup string
	kube   *Kube
	procs  []*process
}

// StartNode starts the node and waits until its Node object is Ready.
func StartNode(t testing.TB, k *Kube, o NodeOptions) *Node {
	t.Helper()
	if o.Name == "" {
		o.Name = "kiln-e2e-node"
	}
	host, _ := k.HostPort()
	// Under /tmp, not t.TempDir(): unix socket paths have a 108-byte limit.
	dir, err := os.MkdirTemp("", "kiln-node-")
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{name: o.Name, dir: dir, sock: filepath.Join(dir, "containerd.sock"), ip: host, kube: k,
		bridge: "kiln" + filepath.Base(dir)[len("kiln-node-"):][:5], cgroup: "/" + filepath.Base(dir)}
	t.Cleanup(func() { n.stop(t) })
	if o.PodSubnet == "" {
		subnet, release, err := reserveSubnet()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(release)
		o.PodSubnet = subnet
	}
	if err := n.start(t, o); err != nil {
		t.Fatalf("starting node %s: %v", o.Name, err)
	}
	return n
}

// PrivateHostIP adds an address in a private (RFC 1918) range, held by no
// other test, to the host's loopback for the test, and returns it.
// Pods reach it as they reach HostIP, through their gateway. A registry on
// it is spoken to over plain HTTP by go-containerregistry's clients with
// no setting, as on localhost: Tekton Chains reads the images it signs
// that way and has no insecure-registry setting for them (its
// storage.oci.repository.insecure covers only where it writes).
//
// The kernel's EEXIST is the lock: an address some other test
// process holds (make test runs packages side by side) is never shared,
// since its cleanup would take it from under this one; the next one is
// tried.
func PrivateHostIP(t testing.TB) string {
	t.Helper()
	start := os.Getpid() & 0xffff
	for i := range 0x10000 {
		n := (start + i) & 0xffff
		ip := fmt.Sprintf("10.254.%d.%d", n>>8, n&255)
		if n&255 == 0 || n&255 == 255 {
			continue
		}
		out, err := exec.Command("ip", "address", "add", ip+"/32", "dev", "lo").CombinedOutput()
		if err != nil && (strings.Contains(string(out), "File exists") || strings.Contains(string(out), "already assigned")) {
			continue // EEXIST, as older and newer iproute2 word it
		}
		if err != nil {
			t.Fatalf("adding %s to lo: %v: %s", ip, err, out)
		}
		t.Cleanup(func() { _ = exec.Command("ip", "address", "del", ip+"/32", "dev", "lo").Run() })
		return ip
	}
	t.Fatal("no free address in 10.254.0.0/16 on lo")
	return ""
}

// reserveSubnet takes the first 10.244.X.0/24 whose reservation file
// (holding the owner's PID) is absent or names a dead process, and that
// no interface of the host has an address in. A node killed before its
// cleanup (a test binary killed on timeout) leaves its bridge behind with
// the subnet's route: a new bridge on the same subnet would get a second
// route to it, and its pods' replies would leave through the old bridge,
// so that no pod reaches the apiserver.
func reserveSubnet() (subnet string, release func(), err error) {
	used, err := hostSubnets()
	if err != nil {
		return "", nil, err
	}
	for x := 10; x < 250; x++ {
		_, cidr, _ := net.ParseCIDR(fmt.Sprintf("10.244.%d.0/24", x))
		if slices.ContainsFunc(used, func(n *net.IPNet) bool { return cidr.Contains(n.IP) }) {
			continue
		}
		lock := filepath.Join(os.TempDir(), fmt.Sprintf("kiln-node-subnet-%d", x))
		if b, err := os.ReadFile(lock); err == nil {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if pid > 0 && syscall.Kill(pid, 0) == nil {
				continue
			}
			_ = os.Remove(lock)
		}
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			continue // another node took it first
		}
		fmt.Fprint(f, os.Getpid())
		f.Close()
		return fmt.Sprintf("10.244.%d.0/24", x), func() { _ = os.Remove(lock) }, nil
	}
	return "", nil, fmt.Errorf("no free pod subnet in 10.244.10-249.0/24")
}

// hostSubnets are the networks of every address on the host's interfaces.
func hostSubnets() ([]*net.IPNet, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing the host's addresses: %w", err)
	}
	var out []*net.IPNet
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			out = append(out, &net.IPNet{IP: n.IP.Mask(n.Mask), Mask: n.Mask})
		}
	}
	return out, nil
}

// Name is the Node object's name.
func (n *Node) Name() string { return n.name }

func (n *Node) start(t testing.TB, o NodeOptions) error {
	kubeconfig := n.kube.Kubeconfig(t)
	if err := n.startContainerd(o.PodSubnet, o.PlainHTTPRegistries); err != nil {
		return err
	}
	pause, err := pauseImage(t)
	if err != nil {
		return err
	}
	if err := n.importImage(pause); err != nil {
		return err
	}
	if err := n.startControllers(kubeconfig); err != nil {
		return err
	}
	return n.startKubelet(kubeconfig)
}

// run starts a long-running server of the node and records it for stop.
func (n *Node) run(name string, args ...string) (*process, error) {
	bin, err := n.tool(name)
	if err != nil {
		return nil, err
	}
	p, err := startProcess(name, exec.Command(bin, args...), filepath.Join(n.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	n.procs = append(n.procs, p)
	return p, nil
}

// tool finds a Kubernetes binary next to kube-apiserver, others on PATH.
func (n *Node) tool(name string) (string, error) {
	if strings.HasPrefix(name, "kube") {
		assets, err := KubeAssets()
		if err != nil {
			return "", err
		}
		p := filepath.Join(assets, name)
		if _, err := os.Stat(p); err != nil {
			return "", &ToolError{Tool: name, Where: assets}
		}
		return p, nil
	}
	return LookTool(name)
}

func (n *Node) startContainerd(subnet string, plainHTTP []string) error {
	runc, err := LookTool("runc")
	if err != nil {
		return err
	}
	cni := "/usr/lib/cni"
	if _, err := os.Stat(filepath.Join(cni, "bridge")); err != nil {
		return &ToolError{Tool: "CNI plugins (containernetworking-plugins)", Where: cni}
	}
	for _, d := range []string{"cni", "ipam", "logs", "pv"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := n.registryHosts(plainHTTP); err != nil {
		return err
	}
	conf := fmt.Sprintf(containerdConfig, n.dir, n.sock, pauseRef, runc, cni)
	if err := os.WriteFile(filepath.Join(n.dir, "containerd.toml"), []byte(conf), 0o644); err != nil {
		return err
	}
	net := fmt.Sprintf(cniConfig, n.bridge, n.bridge, subnet, filepath.Join(n.dir, "ipam"))
	if err := os.WriteFile(filepath.Join(n.dir, "cni", "10-kiln.conflist"), []byte(net), 0o644); err != nil {
		return err
	}
	p, err := n.run("containerd", "--config", filepath.Join(n.dir, "containerd.toml"))
	if err != nil {
		return err
	}
	return waitFor(p, 30*time.Second, func() error {
		_, err := n.ctr("version")
		return err
	})
}

// registryHosts writes certs.d/<host:port>/hosts.toml for each registry
// reached over plain HTTP, for pulls and resolves.
func (n *Node) registryHosts(plainHTTP []string) error {
	for _, h := range plainHTTP {
		if _, err := name.NewRegistry(h, name.StrictValidation); err != nil || strings.ContainsAny(h, "/\\") {
			return fmt.Errorf("plain-HTTP registry %q: not a host[:port]", h)
		}
		dir := filepath.Join(n.dir, "certs.d", h)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		hosts := fmt.Sprintf("server = %[1]q\n[host.%[1]q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+h)
		if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(hosts), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// containerdConfig: the node's own root, state and sockets; the CRI
// sandbox image is the locally built pause; registries' hosts.toml under
// certs.d (registryHosts); runc with cgroupfs, as the
// kubelet's cgroupDriver. restrict_oom_score_adj keeps runc from lowering
// OOM scores, which a VM's unprivileged cgroup setup may refuse.
const containerdConfig = `version = 2
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
[grpc]
  address = "%[2]s"
[ttrpc]
  address = "%[2]s.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "%[1]s/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[3]s"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "%[4]s"
        Root = "%[1]s/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "%[5]s"
    conf_dir = "%[1]s/cni"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "%[1]s/certs.d"
`

// cniConfig: a bridge of the node's own name and subnet. No masquerade:
// pods talk only to the host IP, which the bridge's gateway address
// reaches directly.
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "%s",
  "plugins": [{
    "type": "bridge",
    "bridge": "%s",
    "isGateway": true,
    "ipMasq": false,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": "%s"}]],
      "routes": [{"dst": "0.0.0.0/0"}],
      "dataDir": "%s"
    }
  }]
}
`

// ctr runs containerd's CLI against this node's containerd, in the CRI's
// namespace.
func (n *Node) ctr(args ...string) (string, error) {
	bin, err := LookTool("ctr")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(bin, append([]string{"--address", n.sock, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// ImportImage loads a docker tarball (KoImage, StepsImage) into the
// node's containerd, where the kubelet finds it without a pull.
func (n *Node) ImportImage(t testing.TB, tarPath string) {
	t.Helper()
	if err := n.importImage(tarPath); err != nil {
		t.Fatal(err)
	}
}

func (n *Node) importImage(tarPath string) error {
	out, err := n.ctr("images", "import", "--no-unpack=false", tarPath)
	if err != nil {
		return fmt.Errorf("importing %s: %w", tarPath, err)
	}
	// A pulled image also has a repo digest, which the kubelet reports
	// as the containers' imageID (repo@sha256:…); Tekton Chains records
	// the step images from it. An imported one has only its tag, so it is
	// given its digest reference too.
	for _, m := range importedRe.FindAllStringSubmatch(out, -1) {
		ref, err := name.NewTag(m[1])
		if err != nil {
			return fmt.Errorf("importing %s: image %q: %w", tarPath, m[1], err)
		}
		digested := ref.Context().Name() + "@" + m[2]
		if _, err := n.ctr("images", "tag", "--force", ref.Name(), digested); err != nil {
			return fmt.Errorf("importing %s: %w", tarPath, err)
		}
	}
	return nil
}

// importedRe matches ctr's "unpacking <name> (sha256:…)" lines.
var importedRe = regexp.MustCompile(`unpacking (\S+) \((sha256:[0-9a-f]{64})\)`)

func (n *Node) startControllers(kubeconfig string) error {
	ports := make([]int, 2)
	for i := range ports {
		p, err := freePort("127.0.0.1")
		if err != nil {
			return err
		}
		ports[i] = p
	}
	if _, err := n.run("kube-scheduler", "--kubeconfig="+kubeconfig, "--leader-elect=false",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[0])); err != nil {
		return err
	}
	ca := filepath.Join(n.dir, "apiserver-ca.crt")
	if err := os.WriteFile(ca, n.kube.Config.CAData, 0o644); err != nil {
		return err
	}
	args := []string{"--kubeconfig=" + kubeconfig, "--leader-elect=false",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[1]),
		// The simulated nodes next to this one never heartbeat; the node
		// lifecycle controller would taint them unreachable and evict.
		"--controllers=*,-nodelifecycle,-node-lifecycle-controller",
		// Published as kube-root-ca.crt, which every pod's token volume
		// mounts: in-cluster clients verify the apiserver with it.
		"--root-ca-file=" + ca,
		"--use-service-account-credentials=false"}
	if key := filepath.Join(n.kube.certDir, "sa-signer.key"); fileExists(key) {
		args = append(args, "--service-account-private-key-file="+key)
	}
	_, err := n.run("kube-controller-manager", args...)
	return err
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// HostPathPVs creates count ReadWriteOnce PersistentVolumes of size in
// StorageClass class, folders under the node's own, for the PVCs of
// workspaces' volumeClaimTemplates (the cluster has no provisioner).
func (n *Node) HostPathPVs(t testing.TB, count int, class, size string) {
	t.Helper()
	ctx := context.Background()
	mode := storagev1.VolumeBindingImmediate
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &mode}
	if err := n.kube.Client.Create(ctx, sc); err != nil {
		t.Fatalf("creating StorageClass %s: %v", class, err)
	}
	hostPath := corev1.HostPathDirectoryOrCreate
	for i := range count {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%02d", class, i)},
			Spec: corev1.PersistentVolumeSpec{
				StorageClassName:              class,
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: filepath.Join(n.dir, "pv", fmt.Sprint(i)), Type: &hostPath}},
			},
		}
		if err := n.kube.Client.Create(ctx, pv); err != nil {
			t.Fatalf("creating PersistentVolume %s: %v", pv.Name, err)
		}
	}
}

// PodLogs is the logs of every container of the pod that ran on this
// node, read from the kubelet's log folder (the apiserver has no client
// certificate for kubelets), for failure messages.
func (n *Node) PodLogs(ctx context.Context, ns, pod string) string {
	dirs, _ := filepath.Glob(filepath.Join(n.dir, "logs", ns+"_"+pod+"_*", "*"))
	var b strings.Builder
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*.log"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			s := string(data)
			if len(s) > 4000 {
				s = "…" + s[len(s)-4000:]
			}
			fmt.Fprintf(&b, "--- %s/%s\n%s\n", pod, filepath.Base(d), s)
		}
	}
	return b.String()
}

// waitReady waits until the kubelet has registered the Node and it is Ready.
func (n *Node) waitReady(p *process) error {
	return waitFor(p, 90*time.Second, func() error {
		node := &corev1.Node{}
		if err := n.kube.Client.Get(context.Background(), client.ObjectKey{Name: n.name}, node); err != nil {
			return err
		}
		ready := slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		})
		if !ready {
			return fmt.Errorf("node %s not Ready", n.name)
		}
		return n.untaint(node)
	})
}

// untaint removes the not-ready taint the kubelet registers with. The
// node lifecycle controller removes it on a real cluster; it is off here
// (see startControllers), so the node does its one job for this node.
func (n *Node) untaint(node *corev1.Node) error {
	taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeNotReady
	})
	if len(taints) == len(node.Spec.Taints) {
		return nil
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Spec.Taints = taints
	return n.kube.Client.Patch(context.Background(), node, patch)
}
