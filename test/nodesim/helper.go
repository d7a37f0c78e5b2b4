package nodesim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// The helper is the test binary itself, re-executed by New inside a new
// user and mount namespace (the init hook below picks it out by its
// environment). It mounts a tmpfs over the sysroot folder, then serves one
// JSON request per line on stdin, answering one JSON line each on stdout,
// until stdin closes; the namespace and the tmpfs end with it.

const (
	helperEnv  = "KILN_NODESIM_HELPER"  // set to "1" in the helper
	sysrootEnv = "KILN_NODESIM_SYSROOT" // the folder to mount the tmpfs on
	osName     = "rhcos"                // the stateroot, as on RHCOS
	// tmpfsSize caps the sysroot: the stand-in trees are a few MiB.
	tmpfsSize = "size=512m"
	// maxRequest caps one request line.
	maxRequest = 1 << 20
)

func init() {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(serveHelper(os.Stdin, os.Stdout))
	}
}

// request is one operation; the fields used depend on Op.
type request struct {
	Op string `json:"op"`
	// import: commit each tar of Layers (whiteouts processed from the
	// second one on, or from the first when Base is set), merged on top of
	// Base, as Ref.
	Layers []string `json:"layers,omitempty"`
	Base   string   `json:"base,omitempty"`
	Ref    string   `json:"ref,omitempty"`
	// deploy: FirstInstall copies the deployment's /var into the stateroot.
	FirstInstall bool `json:"firstInstall,omitempty"`
	// write: put Src (a host file) or a symlink to Link at Path (absolute,
	// under /etc or /var) of the default deployment.
	Path string `json:"path,omitempty"`
	Src  string `json:"src,omitempty"`
	Link string `json:"link,omitempty"`
	Mode uint32 `json:"mode,omitempty"`
	UID  int    `json:"uid,omitempty"`
	GID  int    `json:"gid,omitempty"`
	// export: write the default deployment's tree to Out as a tar.
	Out string `json:"out,omitempty"`
}

// response answers a request: Err is empty on success; Output is what
// ostree printed; Kernel is the booted kernel's version (export).
type response struct {
	Err    string `json:"err,omitempty"`
	Output string `json:"output,omitempty"`
	Kernel string `json:"kernel,omitempty"`
}

func serveHelper(in io.Reader, out io.Writer) int {
	sysroot := os.Getenv(sysrootEnv)
	setupErr := setupSysroot(sysroot)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxRequest)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var req request
		var resp response
		switch {
		case setupErr != nil:
			resp.Err = setupErr.Error()
		case json.Unmarshal(sc.Bytes(), &req) != nil:
			resp.Err = "nodesim helper: malformed request"
		default:
			h := &helper{sysroot: sysroot}
			resp = h.handle(req)
		}
		if enc.Encode(resp) != nil {
			return 1
		}
	}
	return 0
}

// setupSysroot checks the namespaces, then mounts the tmpfs and checks it.
// The namespace checks come first: a helper started on the host must not
// mount anything there.
func setupSysroot(sysroot string) error {
	if sysroot == "" || !filepath.IsAbs(sysroot) {
		return fmt.Errorf("nodesim helper: %s must be an absolute path, got %q", sysrootEnv, sysroot)
	}
	if err := checkUserns(); err != nil {
		return err
	}
	if err := checkMountns(); err != nil {
		return err
	}
	// Nothing mounted here may propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the helper's mounts private: %w", err)
	}
	if err := unix.Mount("tmpfs", sysroot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, tmpfsSize); err != nil {
		return fmt.Errorf("mounting a tmpfs on sysroot %s: %w", sysroot, err)
	}
	return checkTmpfs(sysroot)
}

type helper struct {
	sysroot string
}

func (h *helper) handle(req request) response {
	if err := checkIsolated(h.sysroot); err != nil {
		return response{Err: err.Error()}
	}
	var out string
	var kernel string
	var err error
	switch req.Op {
	case "init":
		out, err = h.init()
	case "import":
		out, err = h.importLayers(req.Base, req.Layers, req.Ref)
	case "deploy":
		out, err = h.deploy(req.Ref, req.FirstInstall)
	case "write":
		err = h.write(req)
	case "export":
		kernel, err = h.export(req.Out)
	default:
		err = fmt.Errorf("nodesim helper: unknown operation %q", req.Op)
	}
	resp := response{Output: out, Kernel: kernel}
	if err != nil {
		resp.Err = err.Error()
	}
	return resp
}

func (h *helper) repo() string { return filepath.Join(h.sysroot, "ostree", "repo") }

// ostree runs the ostree CLI, after the isolation check, with a fixed
// environment: deployments stay mutable (no immutable bit on a tmpfs), no
// syncs (nothing here outlives the tmpfs), a fixed locale for stable
// messages.
func (h *helper) ostree(args ...string) (string, error) {
	if err := checkIsolated(h.sysroot); err != nil {
		return "", err
	}
	cmd := exec.Command("ostree", args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C.UTF-8",
		"OSTREE_SYSROOT_DEBUG=mutable-deployments", "OSTREE_SYSROOT_OPTS=skip-sync"}
	b, err := cmd.CombinedOutput()
	// ostree quotes the image's file names in its messages.
	out := termsafe.Escape(strings.TrimSpace(string(b)))
	if err != nil {
		return out, fmt.Errorf("ostree %s: %w: %s", args[0], err, out)
	}
	return out, nil
}

func (h *helper) init() (string, error) {
	out1, err := h.ostree("admin", "init-fs", "--modern", h.sysroot)
	if err != nil {
		return out1, err
	}
	out2, err := h.ostree("admin", "--sysroot="+h.sysroot, "os-init", osName)
	return out1 + "\n" + out2, err
}

// importLayers does what ostree-ext's container import does with layers
// already filtered (internal/importfilter): one commit per layer tar, then a checkout
// of the base and each layer over it (union, whiteouts processed for
// layers), committed as ref.
func (h *helper) importLayers(base string, layers []string, ref string) (string, error) {
	if !validRef(ref) || (base != "" && !validRef(base)) {
		return "", fmt.Errorf("nodesim helper: invalid ref %q or base %q", ref, base)
	}
	var log []string
	refs := make([]string, len(layers))
	for i, l := range layers {
		refs[i] = fmt.Sprintf("%s-layer-%d", ref, i)
		out, err := h.ostree("--repo="+h.repo(), "commit", "--no-bindings", "--tar-autocreate-parents",
			"--branch", refs[i], "--tree=tar="+l)
		if err != nil {
			return strings.Join(log, "\n"), fmt.Errorf("committing layer %d: %w", i, err)
		}
		log = append(log, out)
	}
	merge := filepath.Join(h.sysroot, "kiln-merge")
	if err := os.RemoveAll(merge); err != nil {
		return "", fmt.Errorf("clearing the merge folder: %w", err)
	}
	defer os.RemoveAll(merge)
	checkouts := refs
	if base != "" {
		checkouts = append([]string{base}, refs...)
	}
	for i, r := range checkouts {
		args := []string{"--repo=" + h.repo(), "checkout", "--union"}
		if i > 0 {
			args = append(args, "--whiteouts")
		}
		if out, err := h.ostree(append(args, r, merge)...); err != nil {
			return out, fmt.Errorf("checking out %s: %w", r, err)
		}
	}
	out, err := h.ostree("--repo="+h.repo(), "commit", "--no-bindings", "--link-checkout-speedup",
		"--branch", ref, "--tree=dir="+merge)
	return strings.Join(append(log, out), "\n"), err
}

func validRef(r string) bool {
	if r == "" || len(r) > 100 {
		return false
	}
	for _, c := range r {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// deploy deploys ref. ostree 2022.7 leaves the stateroot's /var alone; from
// 2024.3 on, ostree copies the deployment's /var into an empty stateroot on
// the first deployment, so FirstInstall emulates that here (the existing
// entries, which os-init and the deploy made, are kept).
func (h *helper) deploy(ref string, firstInstall bool) (string, error) {
	if !validRef(ref) {
		return "", fmt.Errorf("nodesim helper: invalid ref %q", ref)
	}
	out, err := h.ostree("admin", "--sysroot="+h.sysroot, "deploy", "--os="+osName, ref)
	if err != nil || !firstInstall {
		return out, err
	}
	dep, _, err := h.defaultDeployment()
	if err != nil {
		return out, err
	}
	return out, copyTreeNoClobber(filepath.Join(dep, "var"), h.stateVar())
}

func (h *helper) stateVar() string {
	return filepath.Join(h.sysroot, "ostree", "deploy", osName, "var")
}

var errNoDeployment = errors.New("nodesim helper: no deployment yet")
