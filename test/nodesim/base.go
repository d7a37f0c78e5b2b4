package nodesim

import (
	"archive/tar"
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kiln-dev/kiln/examples"
)

// The stand-in base has the shape of an RHCOS image as ostree-ext exports
// it (https://github.com/bootc-dev/bootc/tree/main/crates/ostree-ext):
// the commit's /usr/etc appears as etc/ in the image, the top-level
// folders of the CoreOS layout are symlinks into /var
// (https://ostreedev.github.io/ostree/adapting-existing/), the kernel and
// initramfs live in /usr/lib/modules/<kver>, and /var holds what a first
// install puts in place. It is built in memory, byte for byte the same on
// every run, with no pulls and no host files.

// KernelVersion is the base's kernel, the sample base's.
const KernelVersion = examples.KernelVersion

// BaseFirstInstallFile is a file the base ships in /var: the node has it
// after the first install, and keeps it over upgrades.
const BaseFirstInstallFile = "/var/lib/kiln-nodesim/first-install"

// built is the fixed time of every entry and of the image.
var built = time.Date(2025, 10, 15, 0, 0, 0, 0, time.UTC)

const osRelease = `NAME="Red Hat Enterprise Linux CoreOS"
ID="rhel"
ID_LIKE="centos fedora"
VERSION_ID="9.6"
VARIANT="CoreOS"
VARIANT_ID=coreos
OSTREE_VERSION="` + examples.OSVersion + `"
PRETTY_NAME="Red Hat Enterprise Linux CoreOS ` + examples.OSVersion + ` (kiln node simulation stand-in)"
`

// prepareRoot is /usr/lib/ostree/prepare-root.conf
// (https://ostreedev.github.io/ostree/man/ostree-prepare-root.html): a
// read-only sysroot, no composefs and no transient root, so top-level
// folders other than usr, etc and var are dropped on import.
const prepareRoot = "[sysroot]\nreadonly = true\n\n[composefs]\nenabled = no\n\n[root]\ntransient = false\n"

// baseEntry is one tar member: a folder (name ends in "/"), a symlink
// (link set) or a regular file; mode 0 means 0755 or 0644.
type baseEntry struct {
	name, data, link string
	mode             int64
}

func baseEntries() []baseEntry {
	k := "usr/lib/modules/" + KernelVersion + "/"
	es := []baseEntry{
		{name: "boot/"}, {name: "dev/"}, {name: "proc/"}, {name: "run/"}, {name: "sys/"}, {name: "sysroot/"},
		{name: "tmp/", mode: 0o1777},
		{name: "bin", link: "usr/bin"}, {name: "sbin", link: "usr/sbin"}, {name: "lib", link: "usr/lib"}, {name: "lib64", link: "usr/lib64"},
		{name: "home", link: "var/home"}, {name: "mnt", link: "var/mnt"}, {name: "opt", link: "var/opt"},
		{name: "root", link: "var/roothome"}, {name: "srv", link: "var/srv"}, {name: "media", link: "run/media"},
		{name: "ostree", link: "sysroot/ostree"},
		{name: "etc/"},
		{name: "etc/group", data: "root:x:0:\nwheel:x:10:\ncore:x:1000:\n"},
		{name: "etc/hostname", data: "localhost\n"},
		{name: "etc/motd", data: ""},
		{name: "etc/os-release", link: "../usr/lib/os-release"},
		{name: "etc/passwd", data: "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/var/home/core:/bin/bash\n"},
		{name: "etc/shadow", data: "root:!locked::0:99999:7:::\ncore:*:::::::\n", mode: 0o000},
		{name: "etc/systemd/"}, {name: "etc/systemd/system/"},
		{name: "usr/"}, {name: "usr/bin/"}, {name: "usr/sbin/"}, {name: "usr/lib/"}, {name: "usr/lib64/"},
		{name: "usr/local", link: "../var/usrlocal"},
		{name: "usr/lib/modules/"}, {name: k},
		{name: k + "vmlinuz", data: "kiln node simulation stand-in: vmlinuz of " + KernelVersion + "\n"},
		{name: k + "initramfs.img", data: "kiln node simulation stand-in: initramfs of " + KernelVersion + "\n"},
		{name: k + "modules.builtin", data: "kernel/fs/xfs/xfs.ko\n"},
		{name: "usr/lib/os-release", data: osRelease},
		{name: "usr/lib/ostree/"}, {name: "usr/lib/ostree/prepare-root.conf", data: prepareRoot},
		{name: "usr/lib/systemd/"}, {name: "usr/lib/systemd/system/"},
		{name: "usr/share/"},
		{name: "var/"}, {name: "var/lib/"}, {name: "var/lib/kiln-nodesim/"},
		{name: strings.TrimPrefix(BaseFirstInstallFile, "/"), data: "written by the base image's first install\n"},
		{name: "var/home/"}, {name: "var/opt/"}, {name: "var/roothome/", mode: 0o700}, {name: "var/srv/"}, {name: "var/mnt/"},
		{name: "var/usrlocal/"}, {name: "var/usrlocal/bin/"},
	}
	return es
}

// Base is the CoreOS-shaped stand-in base: one uncompressed OCI layer and
// the labels rpm-ostree puts on a bootable image (ostree.linux names the
// kernel; org.opencontainers.image.version is what kiln's fast path reads).
func Base() (v1.Image, error) {
	b, err := tarOf(baseEntries())
	if err != nil {
		return nil, fmt.Errorf("building the node simulation's base: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(b, types.OCIUncompressedLayer),
		History: v1.History{Created: v1.Time{Time: built}, CreatedBy: "kiln test/nodesim: CoreOS-shaped stand-in base"}})
	if err != nil {
		return nil, fmt.Errorf("building the node simulation's base: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("building the node simulation's base: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = "amd64", "linux", v1.Time{Time: built}
	cf.Config.Labels = map[string]string{
		"ostree.linux": KernelVersion, "ostree.bootable": "true", "containers.bootc": "1",
		"com.coreos.osname": osName, "version": examples.OSVersion,
		"org.opencontainers.image.version": examples.OSVersion,
	}
	return mutate.ConfigFile(img, cf)
}

// tarOf writes the entries sorted by name, parents first, root-owned.
func tarOf(entries []baseEntry) ([]byte, error) {
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b baseEntry) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, ModTime: built, Mode: e.mode, Format: tar.FormatPAX}
		switch {
		case strings.HasSuffix(e.name, "/"):
			h.Typeflag = tar.TypeDir
			if h.Mode == 0 {
				h.Mode = 0o755
			}
		case e.link != "":
			h.Typeflag, h.Mode, h.Linkname = tar.TypeSymlink, 0o777, e.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
			if h.Mode == 0 && e.name != "etc/shadow" {
				h.Mode = 0o644
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(e.data)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
