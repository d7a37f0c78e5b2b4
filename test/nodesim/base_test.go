package nodesim

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBaseDeploysWithTheCoreOSLayout deploys the stand-in base and checks
// the layout the node gets from it: the top-level symlinks into /var and
// their targets made by the first install, /etc from the image's etc
// (moved to usr/etc and back by ostree), os-release through its link,
// prepare-root.conf, the kernel the boot entry starts.
func TestBaseDeploysWithTheCoreOSLayout(t *testing.T) {
	n := New(t, Options{})
	v, err := n.Deploy(mustBase(t))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range []string{"/home", "/opt", "/srv", "/root", "/mnt", "/usr/local", "/bin",
		"/var/home", "/var/opt", "/var/usrlocal/bin", "/etc/os-release", "/usr/etc/os-release", "/etc/shadow"} {
		f, ok := v.File(p)
		got[p] = describe(f, ok)
	}
	for _, p := range []string{"/usr/lib/ostree/prepare-root.conf", "/usr/lib/modules/" + KernelVersion + "/vmlinuz"} {
		_, ok := v.File(p)
		got[p] = map[bool]string{true: "present", false: "absent"}[ok]
	}
	osr, _ := v.File("/usr/lib/os-release")
	got["os-release says ID=rhel"] = strconv.FormatBool(strings.Contains(string(osr.Data), "\nID=\"rhel\"\n"))
	got["kernel"] = v.Kernel
	dir := "5 -rwxr-xr-x 0:0 \"\""
	want := map[string]string{
		"/home": "-> var/home", "/opt": "-> var/opt", "/srv": "-> var/srv", "/root": "-> var/roothome",
		"/mnt": "-> var/mnt", "/usr/local": "-> ../var/usrlocal", "/bin": "-> usr/bin",
		"/var/home": dir, "/var/opt": dir, "/var/usrlocal/bin": dir,
		"/etc/os-release": "-> ../usr/lib/os-release", "/usr/etc/os-release": "-> ../usr/lib/os-release",
		"/etc/shadow":                                    "0 ---------- 0:0 \"root:!locked::0:99999:7:::\\ncore:*:::::::\\n\"",
		"/usr/lib/ostree/prepare-root.conf":              "present",
		"/usr/lib/modules/" + KernelVersion + "/vmlinuz": "present",
		"os-release says ID=rhel":                        "true",
		"kernel":                                         KernelVersion,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the deployed base (-want +got):\n%s", d)
	}
}

// TestBaseIsTheSameImageOnEveryBuild builds the base twice: the digest
// must not move (no clock, no host files).
func TestBaseIsTheSameImageOnEveryBuild(t *testing.T) {
	a, b := mustBase(t), mustBase(t)
	da, err := a.Digest()
	if err != nil {
		t.Fatal(err)
	}
	db, err := b.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if da != db {
		t.Errorf("two builds of the base: %s and %s", da, db)
	}
}
