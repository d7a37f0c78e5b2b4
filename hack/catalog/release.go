package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/kiln-dev/kiln/hack/catalog/catlint"
	"github.com/kiln-dev/kiln/pkg/release/build"
)

// release builds the kiln-steps release image into an OCI layout (nothing
// is pushed: `make images` pushes, signs and attests both images) and pins
// its digest as the steps image default of every Task and Pipeline. The
// image is pkg/release's, the one `make images` pushes and the e2e runs:
// hack/stepsbase.sh's Debian rootfs with buildah, plus kiln-steps at
// /ko-app/kiln-steps and kiln-image-build beside it as a ko-style layer,
// reproducible from one revision and one base.
func release(ctx context.Context, root, tag, ociDir, base string) error {
	if base == "" {
		var err error
		if base, err = catlint.StepsBase(root); err != nil {
			return err
		}
	}
	ref, err := name.NewTag(catlint.StepsRepository+":"+tag, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("reading the tag %q: %w", tag, err)
	}
	platform, err := build.ParsePlatform(catlint.ReleasePlatforms[0])
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kiln-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bins, err := build.BuildStepsBinaries(ctx, root, dir, platform)
	if err != nil {
		return err
	}
	img, err := build.StepsImage(base, bins, platform)
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

// pinDefaults rewrites every steps image default in tasks/, pipelines/
// and the GitOps sample Pipeline to pinned and returns the files it
// changed.
func pinDefaults(root, pinned string) ([]string, error) {
	var files []string
	for _, dir := range []string{"tasks", "pipelines", filepath.Join("config", "samples", "gitops")} {
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
