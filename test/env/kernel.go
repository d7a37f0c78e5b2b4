package env

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// KernelHeaders returns the newest kernel build tree `make tools` installed
// (Debian linux-headers-amd64) and its kernel version.
func KernelHeaders() (dir, version string, err error) {
	trees, _ := filepath.Glob("/usr/src/linux-headers-*-amd64")
	sort.Strings(trees)
	if len(trees) == 0 {
		return "", "", &ToolError{Tool: "linux-headers-amd64", Where: "/usr/src"}
	}
	dir = trees[len(trees)-1]
	return dir, strings.TrimPrefix(filepath.Base(dir), "linux-headers-"), nil
}

// SignFile returns the kernel's scripts/sign-file (Debian linux-kbuild-6.1),
// the reference kiln's module signer is checked against.
func SignFile() (string, error) {
	p := "/usr/lib/linux-kbuild-6.1/scripts/sign-file"
	if _, err := os.Stat(p); err != nil {
		return "", &ToolError{Tool: "sign-file", Where: filepath.Dir(p)}
	}
	return p, nil
}

// HelloModuleSource is a minimal out-of-tree module.
const HelloModuleSource = `#include <linux/module.h>
#include <linux/init.h>
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kiln test module");
static int __init kiln_init(void) { return 0; }
static void __exit kiln_exit(void) {}
module_init(kiln_init);
module_exit(kiln_exit);
`

// BuildKernelModule compiles a real out-of-tree module named name from C
// source against the installed kernel headers and returns the .ko path.
func BuildKernelModule(t testing.TB, name, source string) string {
	t.Helper()
	headers, _, err := KernelHeaders()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{name + ".c": source, "Makefile": fmt.Sprintf("obj-m := %s.o\n", name)}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("make", "-s", "-C", headers, "M="+dir, "modules")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compiling kernel module %s: %v\n%s", name, err, out)
	}
	return filepath.Join(dir, name+".ko")
}
