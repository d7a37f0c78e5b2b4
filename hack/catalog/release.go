package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kiln-dev/kiln/hack/catalog/catlint"
)

// release builds the kiln-steps release image into an OCI layout (nothing
// is pushed: publishing the layout, e.g. `crane push`, is a separate,
// credentialed step) and pins its digest as the steps image default of
// every Task and Pipeline. The image is the e2e's (test/env.StepsImage):
// hack/stepsbase.sh's Debian rootfs with buildah, plus kiln-steps at
// /ko-app/kiln-steps as a ko-style layer. It is reproducible: the base is
// the cached tarball as is, the binary is built with -trimpath from the
// checked-out revision, and no layer or config carries a timestamp, so the
// same revision and base give the same digest.
func release(ctx context.Context, root, tag, ociDir, base string) error {
	if base == "" {
		suite, err := catlint.ShellVar(filepath.Join(root, "hack", "versions.sh"), "STEPSBASE_SUITE")
		if err != nil {
			return err
		}
		recipe, err := catlint.ShellVar(filepath.Join(root, "hack", "versions.sh"), "STEPSBASE_RECIPE")
		if err != nil {
			return err
		}
		cache := os.Getenv("KILN_CACHE")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache", "kiln")
		}
		base = filepath.Join(cache, "images", fmt.Sprintf("stepsbase-%s-r%s.tar.gz", suite, recipe))
	}
	ref, err := name.NewTag(catlint.StepsRepository+":"+tag, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("reading the tag %q: %w", tag, err)
	}
	bin, err := buildSteps(ctx, root)
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Dir(bin))
	img, err := stepsImage(base, bin)
	if err != nil {
		return err
	}
	digest, err := writeLayout(ociDir, ref, img)
	if err != nil {
		return err
	}
	pinned := ref.String() + "@" + digest.String()
	files, err := pinDefaults(root, pinned)
	if err != nil {
		return err
	}
	fmt.Printf("built %s into %s (not pushed)\npinned it in %d files; run make catalog\n", pinned, ociDir, len(files))
	return nil
}

// buildSteps builds cmd/steps for the release platform.
func buildSteps(ctx context.Context, root string) (string, error) {
	dir, err := os.MkdirTemp("", "kiln-release-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "kiln-steps")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-tags", "containers_image_openpgp,exclude_graphdriver_btrfs,exclude_graphdriver_devicemapper",
		"-o", bin, "./cmd/steps")
	cmd.Dir = root
	goos, goarch, _ := strings.Cut(catlint.ReleasePlatforms[0], "/")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("building kiln-steps: %w\n%s", err, out)
	}
	return bin, nil
}

// stepsImage is the base tarball's rootfs as one layer, then bin at
// /ko-app/kiln-steps as the entrypoint, for linux/amd64, run as root
// (buildah needs it), with buildah's chroot isolation (runc inside a pod
// lacks the cgroup setup it needs): the same image test/env.StepsImage
// makes for the e2e.
func stepsImage(base, bin string) (v1.Image, error) {
	if _, err := os.Stat(base); err != nil {
		return nil, fmt.Errorf("reading the steps base (run bash hack/stepsbase.sh): %w", err)
	}
	baseLayer, err := tarball.LayerFromFile(base)
	if err != nil {
		return nil, fmt.Errorf("reading the steps base %s: %w", base, err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("reading kiln-steps: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "ko-app/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "ko-app/kiln-steps", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data))},
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
	app, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, baseLayer, app)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	goos, goarch, _ := strings.Cut(catlint.ReleasePlatforms[0], "/")
	cf.OS, cf.Architecture = goos, goarch
	cf.Config.Entrypoint = []string{"/ko-app/kiln-steps"}
	cf.Config.Env = []string{
		"PATH=/ko-app:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"BUILDAH_ISOLATION=chroot",
	}
	return mutate.ConfigFile(img, cf)
}

// writeLayout writes img into an OCI image layout at dir, named by its tag
// (org.opencontainers.image.ref.name), and returns its manifest digest.
func writeLayout(dir string, ref name.Tag, img v1.Image) (v1.Hash, error) {
	if err := os.RemoveAll(dir); err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
	})); err != nil {
		return v1.Hash{}, fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	return img.Digest()
}

// defaultRE is a steps image default, pinned or not, on the default line
// or folded onto the next one.
var defaultRE = regexp.MustCompile(`(?m)^([ ]+)default:(?:[ ]*>-\n[ ]+|[ ]+)` + regexp.QuoteMeta(catlint.StepsRepository) + `:[A-Za-z0-9._-]+(?:@sha256:[0-9a-f]{64})?[ ]*$`)

// pinDefaults rewrites every steps image default in tasks/ and pipelines/
// to pinned and returns the files it changed.
func pinDefaults(root, pinned string) ([]string, error) {
	var files []string
	for _, dir := range []string{"tasks", "pipelines"} {
		m, err := filepath.Glob(filepath.Join(root, dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	var changed []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		// Folded onto its own line: a pinned reference is longer than the
		// 80 columns yamllint's default rules allow, except as a lone word.
		out := defaultRE.ReplaceAll(b, []byte("${1}default: >-\n${1}  "+pinned))
		if bytes.Equal(out, b) {
			continue
		}
		if err := os.WriteFile(f, out, 0o644); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f, err)
		}
		changed = append(changed, f)
	}
	return changed, nil
}
