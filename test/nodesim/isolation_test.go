package nodesim

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// runHelper starts the helper with the given namespaces (none, or some),
// asks it to initialise a sysroot and returns its answer.
func runHelper(t *testing.T, sysroot string, attr *syscall.SysProcAttr) response {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{helperEnv + "=1", sysrootEnv + "=" + sysroot, "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Stdin = strings.NewReader(`{"op":"init"}` + "\n")
	cmd.SysProcAttr = attr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	var resp response
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("helper's answer %q: %v", out, err)
	}
	return resp
}

// TestHelperRefusesOutsideItsNamespaces starts the helper the way a
// mistake would: on the host, and in a user namespace that shares the
// host's mount namespace. Both must refuse to initialise the sysroot,
// mount nothing and create nothing.
func TestHelperRefusesOutsideItsNamespaces(t *testing.T) {
	ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}}
	for _, tc := range []struct {
		name string
		attr *syscall.SysProcAttr
		want string
	}{
		{"host", nil, "initial user namespace"},
		{"user namespace, host's mount namespace", &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER,
			UidMappings: ids, GidMappings: ids, GidMappingsEnableSetgroups: true}, "mount namespace it did not create"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sysroot := filepath.Join(t.TempDir(), "sysroot")
			if err := os.Mkdir(sysroot, 0o700); err != nil {
				t.Fatal(err)
			}
			resp := runHelper(t, sysroot, tc.attr)
			if !strings.Contains(resp.Err, "refusing to run ostree") || !strings.Contains(resp.Err, tc.want) {
				t.Errorf("helper's answer %+v, want a refusal naming %q", resp, tc.want)
			}
			if err := checkTmpfs(sysroot); err == nil {
				t.Errorf("a tmpfs was mounted on %s", sysroot)
			}
			if ents, err := os.ReadDir(sysroot); err != nil || len(ents) != 0 {
				t.Errorf("sysroot %s holds %v (%v), want nothing", sysroot, ents, err)
			}
		})
	}
}

// TestIsolationChecksFailInTheTestProcess calls each check from the test
// process itself, which runs on the host.
func TestIsolationChecksFailInTheTestProcess(t *testing.T) {
	if err := checkIsolated("/dev/shm"); err == nil || !strings.Contains(err.Error(), "initial user namespace") {
		t.Errorf("checkIsolated on the host: %v, want the user namespace refusal", err)
	}
	if err := checkTmpfs("/proc"); err == nil || !strings.Contains(err.Error(), "not on a tmpfs") {
		t.Errorf("checkTmpfs(/proc): %v, want a refusal", err)
	}
	var fs unix.Statfs_t
	if unix.Statfs("/dev/shm", &fs) == nil && fs.Type == unix.TMPFS_MAGIC {
		if err := checkTmpfs("/dev/shm"); err != nil {
			t.Errorf("checkTmpfs(/dev/shm), a tmpfs: %v", err)
		}
	}
}
