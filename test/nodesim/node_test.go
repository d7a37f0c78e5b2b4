package nodesim

import (
	"archive/tar"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUpgradeMergesEtcThreeWaysAndKeepsVar deploys the base, edits /etc
// as Ignition and an administrator would, upgrades to an image that
// changes /etc and /var and reads back what the node sees: ostree's
// three-way merge keeps the node's copy of a file it changed, takes the
// image's copy of one it did not, keeps files only the node has; /var is
// the first install's, the image's /var is not applied on upgrade.
func TestUpgradeMergesEtcThreeWaysAndKeepsVar(t *testing.T) {
	n := New(t, Options{})
	base := mustBase(t)
	v, err := n.Deploy(base)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("base deployed in %v", v.Took)
	if v.Kernel != KernelVersion {
		t.Errorf("booted kernel %q, want %q", v.Kernel, KernelVersion)
	}
	if f, ok := v.File(BaseFirstInstallFile); !ok || string(f.Data) != "written by the base image's first install\n" {
		t.Errorf("first install's /var file: %+v %v", f, ok)
	}
	if f, ok := v.File("/etc/passwd"); !ok || f.Type != tar.TypeReg {
		t.Errorf("/etc/passwd after deploy: %+v %v", f, ok)
	}

	if err := n.EditEtc("/etc/motd", []byte("local motd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.EditEtc("/etc/ignition/written", []byte("first boot\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	img := derived(t, base, layerOf(t,
		reg("etc/motd", "image motd\n"),
		reg("etc/hostname", "image-host\n"),
		reg("var/lib/kiln-nodesim/first-install", "image's var\n"),
		reg("var/lib/new-in-image", "never applied\n"),
		reg("usr/bin/tool", "#!/bin/sh\n"),
	))
	v, err = n.Upgrade(img)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("upgrade took %v", v.Took)
	got := map[string]string{}
	for _, p := range []string{"/etc/motd", "/etc/hostname", "/etc/ignition/written", "/usr/bin/tool", BaseFirstInstallFile, "/var/lib/new-in-image"} {
		if f, ok := v.File(p); ok {
			got[p] = string(f.Data)
		}
	}
	want := map[string]string{
		"/etc/motd":             "local motd\n",
		"/etc/hostname":         "image-host\n",
		"/etc/ignition/written": "first boot\n",
		"/usr/bin/tool":         "#!/bin/sh\n",
		BaseFirstInstallFile:    "written by the base image's first install\n",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("node's files after the upgrade (-want +got):\n%s", d)
	}
}

// TestWhiteoutsRemoveBaseFiles upgrades to an image whose layer deletes a
// base file in /etc (a whiteout) and replaces a base folder (an opaque
// whiteout): ostree's checkout applies both, and the /etc merge drops the
// deleted file the node had not changed.
func TestWhiteoutsRemoveBaseFiles(t *testing.T) {
	n := New(t, Options{})
	base := mustBase(t)
	if _, err := n.Deploy(base); err != nil {
		t.Fatal(err)
	}
	v, err := n.Upgrade(derived(t, base, layerOf(t,
		reg("etc/.wh.hostname", ""),
		dir("usr/lib/systemd/"),
		reg("usr/lib/systemd/.wh..wh..opq", ""),
		reg("usr/lib/systemd/only-this", "x\n"),
	)))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range []string{"/etc/hostname", "/usr/etc/hostname", "/usr/lib/systemd/system", "/usr/lib/systemd/only-this", "/etc/passwd"} {
		_, ok := v.File(p)
		got[p] = map[bool]string{true: "present", false: "absent"}[ok]
	}
	want := map[string]string{"/etc/hostname": "absent", "/usr/etc/hostname": "absent", "/usr/lib/systemd/system": "absent",
		"/usr/lib/systemd/only-this": "present", "/etc/passwd": "present"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the node after the whiteouts (-want +got):\n%s", d)
	}
	for _, p := range v.Paths("/") {
		if strings.Contains(p, ".wh.") {
			t.Errorf("whiteout file %s reached the node", p)
		}
	}
}
