package examples

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	imagev1 "github.com/openshift/api/image/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Facts of the sample cluster's payload. The manifests under
// examples/cluster repeat them; the tests check they agree.
const (
	// Registry is where `make run` serves the images (its embedded registry).
	Registry = "127.0.0.1:5555"
	// ReleaseVersion is the OpenShift release the cluster runs.
	ReleaseVersion = "4.20.3"
	// OSVersion is the RHCOS build of that release (RHEL 9.6 based).
	OSVersion = "9.6.20251015-0"
	// KernelVersion is the base image's kernel (the ostree.linux label).
	KernelVersion = "5.14.0-570.62.1.el9_6.x86_64"

	BaseRepository       = Registry + "/openshift/rhcos"
	ExtensionsRepository = Registry + "/openshift/rhcos-extensions"
	ReleaseRepository    = Registry + "/openshift/release"
	// DriverToolkitImage is the release's driver-toolkit, by tag: its
	// stand-in is built from a Debian rootfs by hack/dtk.sh, which is not
	// bit-for-bit reproducible, so `make run` pushes it under this tag.
	DriverToolkitImage = Registry + "/openshift/driver-toolkit:" + ReleaseVersion
)

// built is the fixed creation time of every image and file (RHCOS build date).
var built = time.Date(2025, 10, 15, 0, 0, 0, 0, time.UTC)

// Named is an image and the repository it is pushed to.
type Named struct {
	Repository string
	Image      v1.Image
}

// Ref returns repository@digest.
func (n Named) Ref() (string, error) {
	d, err := n.Image.Digest()
	if err != nil {
		return "", fmt.Errorf("hashing image for %s: %w", n.Repository, err)
	}
	return n.Repository + "@" + d.String(), nil
}

// Images returns the three images in push order (the release image names
// the other two by digest).
func Images() ([]Named, error) {
	base, err := BaseImage()
	if err != nil {
		return nil, err
	}
	ext, err := ExtensionsImage()
	if err != nil {
		return nil, err
	}
	rel, err := ReleaseImage(base, ext)
	if err != nil {
		return nil, err
	}
	return []Named{{BaseRepository, base}, {ExtensionsRepository, ext}, {ReleaseRepository, rel}}, nil
}

// osRelease is RHCOS 9.6's /usr/lib/os-release.
const osRelease = `NAME="Red Hat Enterprise Linux CoreOS"
VERSION="` + OSVersion + ` (Plow)"
ID="rhel"
ID_LIKE="centos fedora"
VERSION_ID="9.6"
VARIANT="CoreOS"
VARIANT_ID=coreos
PLATFORM_ID="platform:el9"
PRETTY_NAME="Red Hat Enterprise Linux CoreOS ` + OSVersion + ` (Plow)"
ANSI_COLOR="0;31"
LOGO="fedora-logo-icon"
CPE_NAME="cpe:/o:redhat:enterprise_linux:9::coreos"
HOME_URL="https://www.redhat.com/"
BUG_REPORT_URL="https://issues.redhat.com/"
REDHAT_BUGZILLA_PRODUCT="OpenShift Container Platform"
REDHAT_BUGZILLA_PRODUCT_VERSION="4.20"
REDHAT_SUPPORT_PRODUCT="OpenShift Container Platform"
REDHAT_SUPPORT_PRODUCT_VERSION="4.20"
OPENSHIFT_VERSION="4.20"
RHEL_VERSION="9.6"
OSTREE_VERSION="` + OSVersion + `"
`

// NodeOSImage is what a node running the base reports in
// node.status.nodeInfo.osImage (a ModuleDay0's osMapping.literal).
const NodeOSImage = "Red Hat Enterprise Linux CoreOS " + OSVersion + " (Plow)"

// BaseImage is the stand-in RHCOS base: the os-release, its kernel's
// modules folder, the labels rpm-ostree puts on a bootable container image,
// which kiln reads (ostree.linux for the kernel version, version and
// org.opencontainers.image.version for the OS version), and the small
// userland of ostools.go, so that the buildah path (extensions, kernelType)
// runs on it for real.
func BaseImage() (v1.Image, error) {
	tools, err := baseTools()
	if err != nil {
		return nil, err
	}
	layer, err := tarLayer(append([]entry{
		{name: "etc/"},
		{name: "etc/os-release", link: "../usr/lib/os-release"},
		{name: "usr/"},
		{name: "usr/lib/"},
		{name: "usr/lib/modules/"},
		{name: "usr/lib/modules/" + KernelVersion + "/"},
		{name: "usr/lib/modules/" + KernelVersion + "/modules.builtin", data: "kernel/fs/ext4/ext4.ko\nkernel/fs/xfs/xfs.ko\n"},
		{name: "usr/lib/modules/" + KernelVersion + "/vmlinuz", data: "kiln sample stand-in: vmlinuz of kernel " + KernelVersion + "\n"},
		{name: "usr/lib/os-release", data: osRelease},
		// CoreOS keeps /usr/local in /var (usr is read-only on a node);
		// MCO's daemon writes a MachineConfig's /usr/local files there.
		{name: "usr/local", link: "../var/usrlocal"},
		{name: "var/"},
		{name: "var/tmp/", mode: 0o1777},
		{name: "var/usrlocal/"},
		{name: "var/usrlocal/bin/"},
	}, tools...))
	if err != nil {
		return nil, fmt.Errorf("building the base image: %w", err)
	}
	return image(layer, map[string]string{
		"ostree.linux":                             KernelVersion,
		"ostree.bootable":                          "true",
		"containers.bootc":                         "1",
		"com.coreos.osname":                        "rhcos",
		"version":                                  OSVersion,
		"org.opencontainers.image.version":         OSVersion,
		"io.openshift.build.versions":              "machine-os=" + OSVersion,
		"io.openshift.build.version-display-names": "machine-os=Red Hat Enterprise Linux CoreOS",
	}, "rhcos base "+OSVersion)
}

// ExtensionsImage is the stand-in extensions image: the folder the
// generated Containerfile mounts as a repository, holding the sample's
// packages (ostools.go) as NAME.tar.
func ExtensionsImage() (v1.Image, error) {
	const repo = "usr/share/rpm-ostree/extensions/"
	entries := []entry{{name: "usr/"}, {name: "usr/share/"}, {name: "usr/share/rpm-ostree/"}, {name: repo},
		{name: repo + "README", data: "Stand-in for the RHCOS " + OSVersion + " extensions repository: the kiln sample's packages, NAME.tar each, for its rpm-ostree stand-in.\n"}}
	pkgs := extensionPackages()
	for _, p := range sortedKeys(pkgs) {
		b, err := tarBytes(pkgs[p])
		if err != nil {
			return nil, fmt.Errorf("building the extensions image: package %s: %w", p, err)
		}
		entries = append(entries, entry{name: repo + p + ".tar", data: string(b)})
	}
	layer, err := tarLayer(entries)
	if err != nil {
		return nil, fmt.Errorf("building the extensions image: %w", err)
	}
	return image(layer, map[string]string{"version": OSVersion}, "rhcos extensions "+OSVersion)
}

// ReleaseImage is the release image: release-manifests/image-references
// naming base and extensions by digest and the driver toolkit by tag, the
// file kiln reads for DTK_AUTO.
func ReleaseImage(base, ext v1.Image) (v1.Image, error) {
	tags := map[string]string{"driver-toolkit": DriverToolkitImage}
	for tag, n := range map[string]Named{"rhel-coreos": {BaseRepository, base}, "rhel-coreos-extensions": {ExtensionsRepository, ext}} {
		ref, err := n.Ref()
		if err != nil {
			return nil, err
		}
		tags[tag] = ref
	}
	names := make([]string, 0, len(tags))
	for n := range tags {
		names = append(names, n)
	}
	sort.Strings(names)
	is := imagev1.ImageStream{
		TypeMeta:   metav1.TypeMeta{APIVersion: "image.openshift.io/v1", Kind: "ImageStream"},
		ObjectMeta: metav1.ObjectMeta{Name: ReleaseVersion, CreationTimestamp: metav1.NewTime(built)},
	}
	for _, n := range names {
		is.Spec.Tags = append(is.Spec.Tags, imagev1.TagReference{Name: n,
			From: &corev1.ObjectReference{Kind: "DockerImage", Name: tags[n]}})
	}
	refs, err := json.MarshalIndent(is, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("building the release image: %w", err)
	}
	meta, err := json.MarshalIndent(map[string]any{"kind": "cincinnati-metadata-v0", "version": ReleaseVersion,
		"metadata": map[string]string{"url": "https://access.redhat.com/errata/RHBA-2025:00000"}}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("building the release image: %w", err)
	}
	layer, err := tarLayer([]entry{
		{name: "release-manifests/"},
		{name: "release-manifests/image-references", data: string(refs) + "\n"},
		{name: "release-manifests/release-metadata", data: string(meta) + "\n"},
	})
	if err != nil {
		return nil, fmt.Errorf("building the release image: %w", err)
	}
	return image(layer, map[string]string{"io.openshift.release": ReleaseVersion}, "release "+ReleaseVersion)
}

// entry is one tar member: a folder (name ends in "/"), a symlink (link
// set) or a regular file; mode 0 means 0755 for a folder, 0644 for a file.
type entry struct {
	name, data, link string
	mode             int64
}

// tarLayer makes the entries an uncompressed OCI layer: no compressor, so
// the digest cannot move with a compression library.
func tarLayer(entries []entry) (v1.Layer, error) {
	b, err := tarBytes(entries)
	if err != nil {
		return nil, err
	}
	return static.NewLayer(b, types.OCIUncompressedLayer), nil
}

// tarBytes writes the entries sorted by name, so parents come first.
func tarBytes(entries []entry) ([]byte, error) {
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, ModTime: built, Format: tar.FormatPAX, Uname: "root", Gname: "root", Mode: e.mode}
		switch {
		case e.name[len(e.name)-1] == '/':
			h.Typeflag = tar.TypeDir
			if h.Mode == 0 {
				h.Mode = 0o755
			}
		case e.link != "":
			h.Typeflag, h.Mode, h.Linkname = tar.TypeSymlink, 0o777, e.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
			if h.Mode == 0 {
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// image makes a one-layer linux/amd64 OCI image with a fixed config.
func image(layer v1.Layer, labels map[string]string, what string) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: built}, CreatedBy: "kiln examples: " + what, Comment: "deterministic stand-in, see examples/images.go",
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: built}
	cf.Config.Labels = labels
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	return mutate.ConfigFile(img, cf)
}
