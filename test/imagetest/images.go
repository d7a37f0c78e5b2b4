package imagetest

import (
	"archive/tar"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/test/env"
)

// VersionLabel is the OS version label of a CoreOS image, the one the
// image-build stage's preflight compares (osimage.VersionLabel); PushBase
// sets it on the bases it pushes.
const VersionLabel = "org.opencontainers.image.version"

// PushBase puts a random base image (with the version label) of the
// given number of layers into the registry; its last layer is the
// stand-in kernel the node import check requires.
func PushBase(t testing.TB, host, repoTag string, layers int64) v1.Image {
	t.Helper()
	img, err := random.Image(64<<10, layers-1)
	if err != nil {
		t.Fatal(err)
	}
	img = env.WithKernel(t, img)
	cf, _ := img.ConfigFile()
	cfg := cf.Config
	cfg.Labels = map[string]string{VersionLabel: "9.6.20250101-0"}
	if img, err = mutate.Config(img, cfg); err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(host+"/"+repoTag, name.Insecure)
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	return img
}

// PushBusyboxBase builds a from-scratch image holding a static busybox as
// /bin/sh (no rpm-ostree: not CoreOS) and pushes it.
func PushBusyboxBase(ctx context.Context, t *testing.T, e *env.Env, repoTag string) string {
	t.Helper()
	busybox, err := env.LookTool("busybox")
	if err != nil {
		t.Fatal(err)
	}
	b := e.Buildah
	run := func(args ...string) string {
		out, err := b.Run(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	ctr := run("from", "scratch")
	run("copy", ctr, busybox, "/bin/sh")
	kernel, kernelPath := env.KernelFile(t)
	run("copy", ctr, kernel, kernelPath)
	run("commit", "-q", "--identity-label=false", ctr, "localhost/kiln-test-base:1")
	run("rm", ctr)
	target := e.Registry.Ref(repoTag)
	run("push", "-q", "--tls-verify=false", "localhost/kiln-test-base:1", "docker://"+target)
	return target
}

// LayerFiles are the regular files of l, by path, with their content.
func LayerFiles(t *testing.T, l v1.Layer) map[string]string {
	t.Helper()
	files := map[string]string{}
	for name, f := range LayerEntries(t, l) {
		files[name] = f.Data
	}
	return files
}

// LayerEntry is one tar entry of a layer and its content.
type LayerEntry struct {
	Hdr  *tar.Header
	Data string
}

// LayerEntries are l's entries by path (without a leading "./").
func LayerEntries(t *testing.T, l v1.Layer) map[string]LayerEntry {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]LayerEntry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[strings.TrimPrefix(h.Name, "./")] = LayerEntry{Hdr: h, Data: string(b)}
	}
}

// MustRef parses s as a reference to an insecure (plain HTTP) registry.
func MustRef(t *testing.T, s string) name.Reference {
	ref, err := name.ParseReference(s, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}
