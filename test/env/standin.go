package env

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// StandInKernel is the kernel version of stand-in bases: the node import
// check (pkg/nodeimport) refuses an image without exactly one
// /usr/lib/modules/<kver>/vmlinuz, as a node could not boot it.
const StandInKernel = "5.14.0-0.kiln.x86_64"

// KernelLayer is an uncompressed layer holding the stand-in kernel:
// usr/lib/modules/<kver>/vmlinuz.
func KernelLayer(t testing.TB, kver string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := []string{"usr/", "usr/lib/", "usr/lib/modules/", "usr/lib/modules/" + kver + "/"}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	body := []byte("kiln stand-in vmlinuz " + kver + "\n")
	h := &tar.Header{Name: "usr/lib/modules/" + kver + "/vmlinuz", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(0, 0)}
	if err := tw.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// WithKernel appends the stand-in kernel's layer to img, so that a
// stand-in base passes the node import check.
func WithKernel(t testing.TB, img v1.Image) v1.Image {
	t.Helper()
	out, err := mutate.AppendLayers(img, KernelLayer(t, StandInKernel))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// KernelFile writes the stand-in vmlinuz into a temporary folder, for a
// buildah-made base (`buildah copy`), and returns its path and the path
// it belongs at in the image.
func KernelFile(t testing.TB) (src, dest string) {
	t.Helper()
	src = filepath.Join(t.TempDir(), "vmlinuz")
	if err := os.WriteFile(src, []byte("kiln stand-in vmlinuz "+StandInKernel+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return src, "/usr/lib/modules/" + StandInKernel + "/vmlinuz"
}
