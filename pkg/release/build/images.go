package build

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Names of kiln's images, as config/ and the Tasks name them upstream.
const (
	TriggerName = "kiln-trigger"
	StepsName   = "kiln-steps"
	// ImageBuildName is the image-build stage's own binary, shipped in
	// the steps image beside kiln-steps: it links no other stage, so the
	// image-build step's process starts faster.
	ImageBuildName = "kiln-image-build"
	// UpstreamRepository is where config/ and tasks/ name both images.
	UpstreamRepository = "ghcr.io/kiln-dev"
	// NonRootUser is ko's default user of a base-less image (distroless's
	// nonroot), which config/'s runAsNonRoot accepts.
	NonRootUser = "65532"
)

// BuildTags are kiln's build tags: the containers libraries without their
// cgo storage drivers and with the pure-Go OpenPGP.
const BuildTags = "containers_image_openpgp,exclude_graphdriver_btrfs,exclude_graphdriver_devicemapper"

// Platform is an image's os/arch.
type Platform struct{ OS, Arch string }

// ParsePlatform reads "os/arch".
func ParsePlatform(s string) (Platform, error) {
	osName, arch, ok := strings.Cut(s, "/")
	if !ok || osName == "" || arch == "" || strings.Contains(arch, "/") {
		return Platform{}, fmt.Errorf("platform %q: want os/arch, such as linux/amd64", s)
	}
	return Platform{OS: osName, Arch: arch}, nil
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// BuildBinary builds the main package pkg (./cmd/…) of the module at root
// into dir/name for p: static (CGO_ENABLED=0), -trimpath, kiln's tags.
func BuildBinary(ctx context.Context, root, pkg, dir, name string, p Platform) (string, error) {
	if !strings.HasPrefix(pkg, "./") || strings.Contains(pkg, "..") {
		return "", fmt.Errorf("building %q: the package must be a path below the module, ./…", pkg)
	}
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return "", fmt.Errorf("building %s: binary name %q is not a file name", pkg, name)
	}
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", BuildTags, "-o", bin, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// AppImage lays bin at /ko-app/<its name> on base as the entrypoint, for
// p, run as user ("" keeps the base's: root for a rootfs). PATH starts
// with /ko-app, as ko sets it.
func AppImage(base v1.Image, bin, user string, p Platform) (v1.Image, error) {
	return appImage(base, []string{bin}, user, p)
}

// appImage lays bins in one layer at /ko-app/<name>, in order, the first
// as the entrypoint. One binary gives the layer AppImage always gave, so
// kiln-trigger's digest does not change.
func appImage(base v1.Image, bins []string, user string, p Platform) (v1.Image, error) {
	headers := []*tar.Header{{Name: "ko-app/", Typeflag: tar.TypeDir, Mode: 0o755}}
	data := map[string][]byte{}
	for _, bin := range bins {
		b, err := readBinary(bin)
		if err != nil {
			return nil, err
		}
		app := "ko-app/" + filepath.Base(bin)
		if _, dup := data[app]; dup {
			return nil, fmt.Errorf("reading binary %s: a binary named %s is already in the layer", bin, filepath.Base(bin))
		}
		headers = append(headers, &tar.Header{Name: app, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(b))})
		data[app] = b
	}
	layer, err := TarLayer(headers, data)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	return EditConfig(img, func(cf *v1.ConfigFile) {
		cf.OS, cf.Architecture = p.OS, p.Arch
		cf.Config.Entrypoint = []string{"/" + headers[1].Name}
		cf.Config.User = user
		cf.Config.Env = []string{"PATH=/ko-app:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	})
}

// maxBinary caps a binary read into a layer: kiln-steps is about 150 MiB.
const maxBinary = 1 << 30

func readBinary(bin string) ([]byte, error) {
	fi, err := os.Lstat(bin)
	if err != nil {
		return nil, fmt.Errorf("reading binary: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxBinary {
		return nil, fmt.Errorf("reading binary %s: must be a regular file of at most %d bytes", bin, maxBinary)
	}
	return os.ReadFile(bin)
}

// TriggerImage is kiln-trigger's image: bin on no base, non-root.
func TriggerImage(bin string, p Platform) (v1.Image, error) {
	return AppImage(empty.Image, bin, NonRootUser, p)
}

// StepsBinaries are the binaries of the steps image: kiln-steps, its
// entrypoint, and kiln-image-build, which the image-build Task runs.
type StepsBinaries struct {
	Steps, ImageBuild string
}

// BuildStepsBinaries builds kiln-steps and kiln-image-build into dir for p.
func BuildStepsBinaries(ctx context.Context, root, dir string, p Platform) (StepsBinaries, error) {
	steps, err := BuildBinary(ctx, root, "./cmd/"+StepsName, dir, StepsName, p)
	if err != nil {
		return StepsBinaries{}, err
	}
	imageBuild, err := BuildBinary(ctx, root, "./cmd/"+ImageBuildName, dir, ImageBuildName, p)
	if err != nil {
		return StepsBinaries{}, err
	}
	return StepsBinaries{Steps: steps, ImageBuild: imageBuild}, nil
}

// StepsImage is kiln-steps' image: the steps base tarball (a rootfs, as
// hack/stepsbase.sh writes it) as one layer, then one layer with both
// binaries, kiln-steps as the entrypoint. buildah in a pod isolates RUN
// steps with chroot, as the upstream buildah images do: runc inside runc
// needs a cgroup setup a pod does not have.
func StepsImage(base string, bins StepsBinaries, p Platform) (v1.Image, error) {
	if filepath.Base(bins.Steps) != StepsName || filepath.Base(bins.ImageBuild) != ImageBuildName {
		return nil, fmt.Errorf("building the steps image: binaries %s and %s must be named %s and %s", bins.Steps, bins.ImageBuild, StepsName, ImageBuildName)
	}
	if fi, err := os.Lstat(base); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("reading the steps base %s (run bash hack/stepsbase.sh): not a regular file", base)
	}
	layer, err := tarball.LayerFromFile(base)
	if err != nil {
		return nil, fmt.Errorf("reading the steps base %s: %w", base, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	if img, err = appImage(img, []string{bins.Steps, bins.ImageBuild}, "", p); err != nil {
		return nil, err
	}
	return EditConfig(img, func(cf *v1.ConfigFile) {
		cf.Config.Env = append(cf.Config.Env, "BUILDAH_ISOLATION=chroot")
	})
}

// EditConfig returns img with its config file changed by edit.
func EditConfig(img v1.Image, edit func(*v1.ConfigFile)) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	edit(cf)
	return mutate.ConfigFile(img, cf)
}

// TarLayer writes headers in order, each regular file's content from
// data, as a gzip layer. Headers carry no times: the layer's digest
// depends on names, modes and contents only.
func TarLayer(headers []*tar.Header, data map[string][]byte) (v1.Layer, error) {
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
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	})
}
