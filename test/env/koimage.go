package env

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
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
	tagged, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	tarPath = filepath.Join(t.TempDir(), filepath.Base(pkg)+".tar")
	if err := tarball.WriteToFile(tarPath, tagged, img); err != nil {
		t.Fatalf("writing %s: %v", tarPath, err)
	}
	return tarPath, ref
}

func koImage(bin string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	app := "/ko-app/" + filepath.Base(bin)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "ko-app/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: app[1:], Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data))},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = runtime.GOARCH, "linux"
	cfg.Config.Entrypoint = []string{app}
	cfg.Config.User = "65532"
	cfg.Config.Env = []string{"PATH=/ko-app"}
	return mutate.ConfigFile(img, cfg)
}
