package build_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/empty"

	"github.com/kiln-dev/kiln/pkg/release/build"
	"github.com/kiln-dev/kiln/test/env"
)

var amd64 = build.Platform{OS: "linux", Arch: "amd64"}

// writeBinary writes a stand-in binary named name holding content.
func writeBinary(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// standInBase writes a gzipped rootfs tarball with one file, standing in
// for hack/stepsbase.sh's.
func standInBase(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	body := []byte("root:x:0:0::/root:/bin/sh\n")
	if err := tw.WriteHeader(&tar.Header{Name: "etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
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

// The steps image holds the base's files, kiln-steps and kiln-image-build
// side by side under /ko-app, and runs kiln-steps.
func TestStepsImageShipsKilnImageBuildBesideKilnSteps(t *testing.T) {
	dir := t.TempDir()
	bins := build.StepsBinaries{
		Steps:      writeBinary(t, dir, build.StepsName, "steps\n"),
		ImageBuild: writeBinary(t, dir, build.ImageBuildName, "image-build\n"),
	}
	img, err := build.StepsImage(standInBase(t), bins, amd64)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"etc/passwd":              "root:x:0:0::/root:/bin/sh\n",
		"ko-app/kiln-steps":       "steps\n",
		"ko-app/kiln-image-build": "image-build\n",
	}
	if diff := cmp.Diff(want, env.Flatten(t, img)); diff != "" {
		t.Errorf("steps image files (-want +got):\n%s", diff)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/ko-app/kiln-steps"}, cf.Config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
}

// A binary not named as the Tasks call it would leave the image without
// the command a step runs: StepsImage refuses it, naming both names.
func TestStepsImageRefusesMisnamedBinaries(t *testing.T) {
	dir := t.TempDir()
	bins := build.StepsBinaries{
		Steps:      writeBinary(t, dir, build.StepsName, "steps\n"),
		ImageBuild: writeBinary(t, dir, "image-build", "image-build\n"),
	}
	_, err := build.StepsImage(standInBase(t), bins, amd64)
	if err == nil || !strings.Contains(err.Error(), "must be named kiln-steps and kiln-image-build") {
		t.Fatalf("StepsImage with a binary named image-build: %v, want an error naming the binary names", err)
	}
}

// AppImage of one binary (kiln-trigger's image, test/env's ko images)
// still gives the digest it gave before the steps image took two
// binaries (testdata/trigger-true.digest, from the earlier code): the
// layer and config of a one-binary image did not change.
func TestAppImageOfOneBinaryKeepsItsDigest(t *testing.T) {
	bin := writeBinary(t, t.TempDir(), build.TriggerName, "#!/bin/true\n")
	img, err := build.AppImage(empty.Image, bin, build.NonRootUser, amd64)
	if err != nil {
		t.Fatal(err)
	}
	got, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "trigger-true.digest"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.TrimSpace(string(want)), got.String()); diff != "" {
		t.Errorf("kiln-trigger image digest (-golden +got):\n%s", diff)
	}
}
