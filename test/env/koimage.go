package env

import (
	"archive/tar"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kiln-dev/kiln/pkg/release/build"
)

// hostPlatform is this machine's linux/GOARCH, which the node runs.
func hostPlatform() build.Platform { return build.Platform{OS: "linux", Arch: runtime.GOARCH} }

// KoImage builds the main package pkg of this repository and wraps it the
// way ko does (pkg/build.AppImage, as kiln-trigger's release image): one
// layer holding /ko-app/<name>, that binary as the entrypoint, a non-root
// user (config/'s Deployments set runAsNonRoot), no base image and so no
// pulls. It writes the image as a docker tarball tagged ref, for
// Node.ImportImage, and returns the tarball's path.
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
	return build.AppImage(empty.Image, bin, build.NonRootUser, hostPlatform())
}

// appendLayer adds layer on base for this machine's linux/GOARCH and lets
// edit change the runtime config.
func appendLayer(base v1.Image, layer v1.Layer, edit func(*v1.Config)) (v1.Image, error) {
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	return editConfig(img, func(cf *v1.ConfigFile) {
		p := hostPlatform()
		cf.Architecture, cf.OS = p.Arch, p.OS
		edit(&cf.Config)
	})
}

// editConfig returns img with its config file changed by edit.
func editConfig(img v1.Image, edit func(*v1.ConfigFile)) (v1.Image, error) {
	return build.EditConfig(img, edit)
}

// tarLayer writes headers in order, each regular file's content from data.
func tarLayer(headers []*tar.Header, data map[string][]byte) (v1.Layer, error) {
	return build.TarLayer(headers, data)
}
