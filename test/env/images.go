package env

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/kiln-dev/kiln/pkg/release/build"
)

// The images a test node runs besides kiln's release images (which the
// e2e pushes with pkg/release and the node pulls from the test registry)
// are made here from local binaries and imported into its containerd.
const (
	pauseRef = "kiln.local/pause:e2e"
	// StepsRef is the kiln-steps image StepsImage makes.
	StepsRef = "kiln.local/kiln-steps:e2e"
)

// pauseImage is the CRI sandbox image: test/env/internal/pause, ko-style.
func pauseImage(t testing.TB) (string, error) {
	img, err := koImage(BuildBinary(t, "./test/env/internal/pause"))
	if err != nil {
		return "", fmt.Errorf("making the pause image: %w", err)
	}
	return writeImage(t.TempDir(), pauseRef, img)
}

// StepsImage is the kiln-steps image the e2e's pipelines run, made by
// pkg/release/build as `make images` makes it: kiln-steps at /ko-app/kiln-steps
// and kiln-image-build beside it, which the image-build Task runs, on the
// Debian rootfs of hack/stepsbase.sh, which has the buildah CLI
// that image-build's buildah path and kmod-build call, run as root
// (buildah needs it; the Tasks that call it are privileged). It returns
// the docker tarball and the image's tag.
func StepsImage(t testing.TB) (tarPath, ref string) {
	t.Helper()
	img := StepsReleaseImage(t)
	tarPath, err := writeImage(t.TempDir(), StepsRef, img)
	if err != nil {
		t.Fatal(err)
	}
	return tarPath, StepsRef
}

// StepsBase is hack/stepsbase.sh's cached tarball; a test fails naming
// the script when it is missing.
func StepsBase(t testing.TB) string {
	t.Helper()
	v, err := Versions()
	if err != nil {
		t.Fatal(err)
	}
	base := build.StepsBasePath(CacheDir(), v["STEPSBASE_SUITE"], v["STEPSBASE_RECIPE"])
	if _, err := os.Stat(base); err != nil {
		t.Fatal(&ToolError{Tool: "kiln-steps base image (hack/stepsbase.sh)", Where: base})
	}
	return base
}

// StepsReleaseImage is pkg/release/build's kiln-steps image for this machine.
func StepsReleaseImage(t testing.TB) v1.Image {
	t.Helper()
	base := StepsBase(t)
	bins, err := build.BuildStepsBinaries(t.Context(), RepoRoot(), t.TempDir(), hostPlatform())
	if err != nil {
		t.Fatal(err)
	}
	img, err := build.StepsImage(base, bins, hostPlatform())
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TektonImages are the images Tekton's controller puts in TaskRun pods,
// made from the commands `make tools` built (hack/tekton): it maps the
// controller's image flag to the image's tag and tarball.
type TektonImages map[string]struct{ Ref, Tar string }

func tektonImages(t testing.TB, version string) (TektonImages, error) {
	dir := filepath.Join(CacheDir(), "bin", "tekton-"+version)
	out := TektonImages{}
	for _, cmd := range []string{"entrypoint", "nop", "sidecarlogresults", "workingdirinit"} {
		bin := filepath.Join(dir, cmd)
		if _, err := os.Stat(bin); err != nil {
			return nil, &ToolError{Tool: "tekton " + cmd, Where: dir}
		}
		img, err := koImage(bin)
		if err != nil {
			return nil, err
		}
		ref := "kiln.local/tekton/" + cmd + ":" + version
		p, err := writeImage(t.TempDir(), ref, img)
		if err != nil {
			return nil, err
		}
		out[cmd+"-image"] = struct{ Ref, Tar string }{ref, p}
	}
	shell, err := shellImage()
	if err != nil {
		return nil, err
	}
	ref := "kiln.local/tekton/shell:" + version
	p, err := writeImage(t.TempDir(), ref, shell)
	if err != nil {
		return nil, err
	}
	out["shell-image"] = struct{ Ref, Tar string }{ref, p}
	return out, nil
}

// shellApplets are the commands Tekton's script and volume-setup init
// containers run in the shell image.
var shellApplets = []string{"sh", "cat", "chmod", "cp", "ls", "mkdir", "touch", "base64", "echo"}

// shellImage is Debian's static busybox with the applets Tekton uses, the
// stand-in for the busybox image Tekton's release config names.
func shellImage() (v1.Image, error) {
	bin, err := LookTool("busybox")
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	headers := []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data))},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
	}
	for _, a := range shellApplets {
		headers = append(headers, &tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
	}
	layer, err := tarLayer(headers, map[string][]byte{"bin/busybox": data})
	if err != nil {
		return nil, err
	}
	return appendLayer(empty.Image, layer, func(c *v1.Config) { c.Env = []string{"PATH=/bin"} })
}

// Flatten returns img's final filesystem, as tests read it: regular files
// under 1 MiB with their content (larger ones empty), symlinks as
// "-> target"; names without a leading "./" or "/".
func Flatten(t testing.TB, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("reading image filesystem: %v", err)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/")
		switch h.Typeflag {
		case tar.TypeSymlink:
			files[name] = "-> " + h.Linkname
		case tar.TypeReg:
			var buf bytes.Buffer
			if h.Size < 1<<20 {
				if _, err := io.Copy(&buf, tr); err != nil {
					t.Fatal(err)
				}
			}
			files[name] = buf.String()
		}
	}
}
