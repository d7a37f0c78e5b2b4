package env_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/test/env"
)

// TestRegistryRoundTrip pushes an image to the real docker-registry with
// go-containerregistry and reads it back by digest.
func TestRegistryRoundTrip(t *testing.T) {
	r := env.StartRegistry(t, env.RegistryOptions{})
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(r.Ref("smoke/random:v1"), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref)
	if err != nil {
		t.Fatalf("reading back %s: %v", ref, err)
	}
	if desc.Digest != want {
		t.Fatalf("digest: got %s, pushed %s", desc.Digest, want)
	}
	got, err := desc.Image()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := got.Layers()
	if err != nil {
		t.Fatalf("reading layers: %v", err)
	}
	if len(layers) != 2 {
		t.Fatalf("layers: got %d, want 2", len(layers))
	}
}

// TestBuildahBudAndPush builds FROM an image made with `buildah from
// scratch` (holding a static busybox), runs a RUN step through runc, pushes
// to the real registry and reads the result back with go-containerregistry.
func TestBuildahBudAndPush(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	b := e.Buildah
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	busybox, err := env.LookTool("busybox")
	if err != nil {
		t.Fatal(err)
	}
	ctr := mustBuildah(ctx, t, b, "from", "scratch")
	mustBuildah(ctx, t, b, "copy", ctr, busybox, "/bin/sh")
	mustBuildah(ctx, t, b, "commit", "-q", ctr, "localhost/kiln-smoke-base:1")
	mustBuildah(ctx, t, b, "rm", ctr)

	dir := t.TempDir()
	containerfile := "FROM localhost/kiln-smoke-base:1\nRUN echo built-by-kiln > /built && ulimit -n > /nofile\n"
	if err := os.WriteFile(filepath.Join(dir, "Containerfile"), []byte(containerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	mustBuildah(ctx, t, b, "bud", "-q", "--layers", "--timestamp", "0", "-t", "localhost/kiln-smoke:1", dir)
	target := e.Registry.Ref("smoke/buildah:1")
	mustBuildah(ctx, t, b, "push", "-q", "localhost/kiln-smoke:1", "docker://"+target)

	ref, err := name.ParseReference(target, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatalf("reading pushed image %s: %v", target, err)
	}
	files := env.Flatten(t, img)
	if got := strings.TrimSpace(files["built"]); got != "built-by-kiln" {
		t.Errorf("/built: got %q, want %q", got, "built-by-kiln")
	}
	// containers.conf's default_ulimits reached the RUN step through runc.
	if got := strings.TrimSpace(files["nofile"]); got != "1024" {
		t.Errorf("ulimit -n inside RUN: got %q, want 1024", got)
	}
	if _, ok := files["bin/sh"]; !ok {
		t.Errorf("base layer missing: /bin/sh not in the pushed image")
	}
}

func mustBuildah(ctx context.Context, t *testing.T, b *env.Buildah, args ...string) string {
	t.Helper()
	out, err := b.Run(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
