package env

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// DTKTarball returns the driver-toolkit stand-in rootfs hack/dtk.sh built for
// the installed kernel headers: a Debian minbase with gcc and make plus
// /usr/src/linux-headers-<kver>, as a gzip'd tar. kver is the headers'
// kernel version, the one modules compile against inside it.
func DTKTarball() (path, kver string, err error) {
	_, kver, err = KernelHeaders()
	if err != nil {
		return "", "", err
	}
	v, err := Versions()
	if err != nil {
		return "", "", err
	}
	dir := filepath.Join(CacheDir(), "images")
	path = filepath.Join(dir, fmt.Sprintf("dtk-%s-r%s-%s.tar.gz", v["DTK_SUITE"], v["DTK_RECIPE"], kver))
	if _, err := os.Stat(path); err != nil {
		return "", "", &ToolError{Tool: "driver-toolkit stand-in " + filepath.Base(path), Where: dir}
	}
	return path, kver, nil
}

// PushDTK pushes the driver-toolkit stand-in to ref as a one-layer image
// (no network but the test registry) and returns it by digest and the kernel
// version its headers are for.
func PushDTK(t testing.TB, ref string) (byDigest, kver string) {
	t.Helper()
	path, kver, err := DTKTarball()
	if err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	img = withConfig(t, img, map[string]string{"io.kiln.test": "driver-toolkit"})
	return push(t, ref, img), kver
}

// PushOSImage pushes a test "OS" image: a static busybox as /bin/sh (with
// depmod, modinfo and true as busybox applets) and the folder
// /usr/lib/modules/<kver>/, from which kiln reads the kernel version,
// holding a stand-in vmlinuz.
func PushOSImage(t testing.TB, ref, kver string) string {
	t.Helper()
	bb, err := LookTool("busybox")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entry := func(h *tar.Header, data []byte) {
		h.ModTime, h.Format = time.Unix(0, 0), tar.FormatPAX
		h.Size = int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"bin/", "sbin/", "tmp/", "usr/", "usr/lib/", "usr/lib/modules/", "usr/lib/modules/" + kver + "/"} {
		entry(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}, nil)
	}
	entry(&tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755}, bin)
	// One kernel, as the node import check requires of an image kiln
	// layers on.
	entry(&tar.Header{Name: "usr/lib/modules/" + kver + "/vmlinuz", Typeflag: tar.TypeReg, Mode: 0o644}, []byte("stand-in vmlinuz "+kver+"\n"))
	for _, l := range []string{"bin/sh", "bin/true", "bin/ls", "bin/cat", "sbin/depmod", "sbin/modinfo"} {
		entry(&tar.Header{Name: l, Typeflag: tar.TypeSymlink, Linkname: "/bin/busybox", Mode: 0o777}, nil)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	img = withConfig(t, img, map[string]string{"io.kiln.test": "os"})
	return push(t, ref, img)
}

func withConfig(t testing.TB, img v1.Image, labels map[string]string) v1.Image {
	t.Helper()
	img, err := editConfig(img, func(cf *v1.ConfigFile) {
		cf.Architecture, cf.OS = "amd64", "linux"
		cf.Config.Labels = labels
		cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func push(t testing.TB, ref string, img v1.Image) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return r.Context().Digest(d.String()).String()
}
