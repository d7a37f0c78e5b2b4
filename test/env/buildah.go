package env

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// Buildah is a private buildah setup: its own storage (overlay) and
// containers.conf under a temporary root, so tests neither see nor touch the
// machine's images.
type Buildah struct {
	Root string
	// Env is the environment buildah runs with: CONTAINERS_CONF,
	// CONTAINERS_STORAGE_CONF and CONTAINERS_REGISTRIES_CONF.
	Env []string
	bin string
}

// BuildahOptions configure NewBuildah.
type BuildahOptions struct {
	// InsecureRegistries are reached over plain HTTP (test registries).
	InsecureRegistries []string
}

// containersConf: runc because crun fails on this VM's hybrid cgroups, and
// explicit ulimits because the VM lacks CAP_SYS_RESOURCE to raise them.
const containersConf = `[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]

[engine]
runtime = "runc"
`

// NewBuildah writes the configuration and returns the setup. Storage is
// unmounted and removed when t ends.
func NewBuildah(t testing.TB, o BuildahOptions) *Buildah {
	t.Helper()
	b, err := newBuildah(o)
	if err != nil {
		t.Fatalf("preparing buildah: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Cleanup(); err != nil {
			t.Errorf("cleaning up buildah: %v", err)
		}
	})
	return b
}

func newBuildah(o BuildahOptions) (*Buildah, error) {
	bin, err := LookTool("buildah")
	if err != nil {
		return nil, err
	}
	if _, err := LookTool("runc"); err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "kiln-buildah-")
	if err != nil {
		return nil, err
	}
	storage := fmt.Sprintf("[storage]\ndriver = \"overlay\"\ngraphroot = %q\nrunroot = %q\n",
		filepath.Join(root, "storage"), filepath.Join(root, "run"))
	var reg strings.Builder
	reg.WriteString("unqualified-search-registries = []\nshort-name-mode = \"disabled\"\n")
	for _, h := range o.InsecureRegistries {
		fmt.Fprintf(&reg, "\n[[registry]]\nlocation = %q\ninsecure = true\n", h)
	}
	files := map[string]string{
		"containers.conf": containersConf,
		"storage.conf":    storage,
		"registries.conf": reg.String(),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			os.RemoveAll(root)
			return nil, err
		}
	}
	env := append(os.Environ(),
		"CONTAINERS_CONF="+filepath.Join(root, "containers.conf"),
		"CONTAINERS_STORAGE_CONF="+filepath.Join(root, "storage.conf"),
		"CONTAINERS_REGISTRIES_CONF="+filepath.Join(root, "registries.conf"),
		"TMPDIR="+root,
	)
	return &Buildah{Root: root, Env: env, bin: bin}, nil
}

// Command returns a buildah command with this setup's environment.
func (b *Buildah) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Env = b.Env
	return cmd
}

// Run runs buildah and returns its trimmed stdout; the error carries stderr.
func (b *Buildah) Run(ctx context.Context, args ...string) (string, error) {
	cmd := b.Command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("buildah %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Cleanup removes containers, unmounts what buildah left mounted under the
// root and removes the root.
func (b *Buildah) Cleanup() error {
	ctx := context.Background()
	_, _ = b.Run(ctx, "rm", "--all")
	_, _ = b.Run(ctx, "rmi", "--all", "--force")
	for _, m := range mountsUnder(b.Root) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			return fmt.Errorf("unmounting %s: %w", m, err)
		}
	}
	return os.RemoveAll(b.Root)
}

// mountsUnder lists mount points below root, deepest first.
func mountsUnder(root string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], root+"/") {
			mounts = append(mounts, fields[4])
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	return mounts
}
