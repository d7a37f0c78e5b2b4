package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/kiln-dev/kiln/hack/catalog/catlint"
	"github.com/kiln-dev/kiln/pkg/release/build"
)

// fakeBase writes a small gzipped rootfs tarball, standing in for
// hack/stepsbase.sh's.
func fakeBase(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	body := []byte("root:x:0:0::/root:/bin/sh\n")
	for _, h := range []*tar.Header{
		{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "base.tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReleaseImageReproducibleAndPinned: the same base and binary give the
// same digest; the OCI layout holds that image under its tag; pinning
// rewrites every Task's and Pipeline's steps image default (pinned or not),
// the GitOps sample's too, so that the pin check passes.
func TestReleaseImageReproducibleAndPinned(t *testing.T) {
	base := fakeBase(t)
	binDir := t.TempDir()
	bins := build.StepsBinaries{Steps: filepath.Join(binDir, build.StepsName), ImageBuild: filepath.Join(binDir, build.ImageBuildName)}
	for _, bin := range []string{bins.Steps, bins.ImageBuild} {
		if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	amd64 := build.Platform{OS: "linux", Arch: "amd64"}
	img, err := build.StepsImage(base, bins, amd64)
	if err != nil {
		t.Fatal(err)
	}
	again, err := build.StepsImage(base, bins, amd64)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Fatalf("two builds of the same inputs: %s and %s", d1, d2)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Architecture != "amd64" || cf.Config.Entrypoint[0] != "/ko-app/kiln-steps" || !cf.Created.IsZero() {
		t.Errorf("config: arch %s, entrypoint %v, created %v", cf.Architecture, cf.Config.Entrypoint, cf.Created)
	}

	tag := name.MustParseReference(catlint.StepsRepository + ":v0.1.0").(name.Tag)
	dir := filepath.Join(t.TempDir(), "oci")
	digest, err := writeLayout(dir, tag, img)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != digest || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v0.1.0" {
		t.Fatalf("OCI layout index %+v, want one manifest %s named v0.1.0", im.Manifests, digest)
	}

	root := t.TempDir()
	for _, d := range []string{"tasks", "pipelines", filepath.Join("config", "samples", "gitops")} {
		copyDir(t, filepath.Join("..", "..", d), filepath.Join(root, d))
	}
	// Twice: an unpinned default and an already pinned one are both rewritten.
	for _, pinned := range []string{tag.String() + "@sha256:" + strings.Repeat("a", 64), tag.String() + "@" + digest.String()} {
		changed, err := pinDefaults(root, pinned)
		if err != nil {
			t.Fatal(err)
		}
		if len(changed) == 0 {
			t.Fatalf("pinning %s changed nothing", pinned)
		}
	}
	var rs []*catlint.Resource
	for _, d := range []string{"tasks", "pipelines"} {
		files, _ := filepath.Glob(filepath.Join(root, d, "*.yaml"))
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			r, err := catlint.DecodeResource(context.Background(), f, d+"/"+filepath.Base(f))
			if err != nil {
				t.Fatal(err)
			}
			if got := catlint.StepsImageDefault(r); got != "" && !strings.HasSuffix(got, "@"+digest.String()) {
				t.Errorf("%s: steps image default %s, want the built digest %s", r.Rel, got, digest)
			}
			rs = append(rs, r)
		}
	}
	if errs := catlint.CheckPinned(rs); len(errs) > 0 {
		t.Errorf("after pinning: %v", errors.Join(errs...))
	}
	sample, err := os.ReadFile(filepath.Join(root, "config", "samples", "gitops", "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sample), "\n      "+tag.String()+"@"+digest.String()+"\n") {
		t.Errorf("the GitOps sample Pipeline's steps image default is not pinned to %s", digest)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(src, "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
