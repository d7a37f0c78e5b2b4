package env

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// KoImage builds the main package pkg of this repository and wraps it the
// way ko does: one layer holding /ko-app/<name>, that binary as the
// entrypoint, a non-root user (config/'s Deployments set runAsNonRoot),
// no base image and so no pulls. It writes the image as a docker tarball
// tagged ref, for Node.ImportImage, and returns the tarball's path.
func KoImage(t testing.TB, pkg, ref string) (tarPath, tag string) {
	t.Helper()
	bin := BuildBinary(t, pkg)
	img, err := koImage(bin)
	if err != nil {
		t.Fatalf("making the image of %s: %v", pkg, err)
	}
	tarPath, err = writeImage(t.TempDir(), ref, img)
	if err != nil {
		t.Fatal(err)
	}
	return tarPath, ref
}

// writeImage writes img as a docker tarball tagged ref into dir.
func writeImage(dir, ref string, img v1.Image) (string, error) {
	tagged, err := name.NewTag(ref)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".tar")
	if err := tarball.WriteToFile(p, tagged, img); err != nil {
		return "", fmt.Errorf("writing image %s to %s: %w", ref, p, err)
	}
	return p, nil
}

func koImage(bin string) (v1.Image, error) {
	return appImage(empty.Image, bin, "65532")
}

// appImage adds bin at /ko-app/<name> on base, as its entrypoint, run as
// user (empty: the base's, root for a Debian rootfs).
func appImage(base v1.Image, bin, user string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	app := "/ko-app/" + filepath.Base(bin)
	layer, err := tarLayer([]*tar.Header{
		{Name: "ko-app/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: app[1:], Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data))},
	}, map[string][]byte{app[1:]: data})
	if err != nil {
		return nil, err
	}
	return appendLayer(base, layer, func(c *v1.Config) {
		c.Entrypoint = []string{app}
		c.User = user
		c.Env = []string{"PATH=/ko-app:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	})
}

// appendLayer adds layer on base for this machine's linux/GOARCH and lets
// edit change the runtime config.
func appendLayer(base v1.Image, layer v1.Layer, edit func(*v1.Config)) (v1.Image, error) {
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	return editConfig(img, func(cf *v1.ConfigFile) {
		cf.Architecture, cf.OS = runtime.GOARCH, "linux"
		edit(&cf.Config)
	})
}

// editConfig returns img with its config file changed by edit.
func editConfig(img v1.Image, edit func(*v1.ConfigFile)) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	edit(cf)
	return mutate.ConfigFile(img, cf)
}

// tarLayer writes headers in order, each regular file's content from data.
func tarLayer(headers []*tar.Header, data map[string][]byte) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range headers {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(data[h.Name]); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	})
}
