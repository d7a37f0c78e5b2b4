package nodesim

import (
	"archive/tar"
	"os"
	"path/filepath"
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

// TestViewExportWritesTheSubtreeInsideTheFolder exports a folder of a
// view: its files and symlinks land at the same paths under the target,
// entries outside the prefix are not written, and a symlinked folder
// pointing out of the target cannot carry a file outside it.
func TestViewExportWritesTheSubtreeInsideTheFolder(t *testing.T) {
	outside := t.TempDir()
	v := &View{Files: map[string]File{
		"/usr/lib/k":          {Type: tar.TypeDir},
		"/usr/lib/k/a.ko":     {Type: tar.TypeReg, Data: []byte("module")},
		"/usr/lib/k/build":    {Type: tar.TypeSymlink, Link: "/usr/src/k"},
		"/usr/lib/k/out":      {Type: tar.TypeSymlink, Link: outside},
		"/usr/lib/k/out/evil": {Type: tar.TypeReg, Data: []byte("x")},
		"/usr/lib/other":      {Type: tar.TypeReg, Data: []byte("not asked")},
	}}
	dir := t.TempDir()
	err := v.Export("/usr/lib/k", dir)
	if err == nil || !strings.Contains(err.Error(), "/usr/lib/k/out/evil") {
		t.Errorf("Export through a symlink out of the folder: err %v, want one naming /usr/lib/k/out/evil", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "evil")); err == nil {
		t.Errorf("Export wrote through a symlink outside the target folder")
	}
	delete(v.Files, "/usr/lib/k/out/evil")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := v.Export("/usr/lib/k", dir); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			got[rel] = "-> " + l
			return err
		case d.IsDir():
			got[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			got[rel] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"usr": "dir", "usr/lib": "dir", "usr/lib/k": "dir", "usr/lib/k/a.ko": "module",
		"usr/lib/k/build": "-> /usr/src/k", "usr/lib/k/out": "-> " + outside}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("exported tree (-want +got):\n%s", d)
	}
}
