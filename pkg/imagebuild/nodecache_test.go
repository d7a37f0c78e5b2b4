package imagebuild

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/nodecache"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// TestBuildOnCachedBaseReadsNoBaseBlob: with a node import cache, the
// first fast-path build on a base reads each base layer once (to fill
// the cache) and the next build on it reads none, only the base's config;
// both push the image, and record the node check, that a build without
// a cache pushes and records for the same inputs.
func TestBuildOnCachedBaseReadsNoBaseBlob(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	const layers = 3
	imagetest.PushBase(t, reg.Host, "base/os:1", layers)
	var warnings bytes.Buffer
	cache := &nodecache.Cache{Dir: filepath.Join(t.TempDir(), "cache"), Warnings: &warnings}
	for i, wantBlobs := range []int{1 + layers, 1, 1} {
		motd := fmt.Sprintf("change %d\n", i)
		log := &requestLog{next: http.DefaultTransport, kind: map[string]int{}}
		in := testInput(t, reg.Host, "base/os:1", fmt.Sprintf("kiln/cached%d", i), motd)
		in.NodeCache = cache
		got, err := Build(context.Background(), registry.Remote{Insecure: []string{reg.Host}, Transport: log}, in)
		if err != nil {
			t.Fatal(err)
		}
		if n := log.kind["GET base/os blobs"]; n != wantBlobs {
			t.Errorf("build %d read %d blobs of the base (%s); want %d", i, n, show(log.kind), wantBlobs)
		}
		want, err := Build(context.Background(), registry.Remote{Insecure: []string{reg.Host}},
			testInput(t, reg.Host, "base/os:1", fmt.Sprintf("kiln/uncached%d", i), motd))
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest != want.Digest {
			t.Errorf("build %d: %s with the cache, %s without", i, got.Digest, want.Digest)
		}
		if d := cmp.Diff(want.Lint, got.Lint); d != "" {
			t.Errorf("build %d: node check differs (-uncached +cached):\n%s", i, d)
		}
	}
	if warnings.Len() > 0 {
		t.Errorf("cache warnings: %s", warnings.String())
	}
}

// TestBuildWithUnwritableCacheSucceeds: a cache folder that cannot be
// created (its path is a file) costs a warning, never the build, which
// pushes the image a build without a cache pushes.
func TestBuildWithUnwritableCacheSucceeds(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	imagetest.PushBase(t, reg.Host, "base/os:1", 2)
	file := filepath.Join(t.TempDir(), "not-a-folder")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var warnings bytes.Buffer
	r := registry.Remote{Insecure: []string{reg.Host}}
	in := testInput(t, reg.Host, "base/os:1", "kiln/a", "x\n")
	in.NodeCache = &nodecache.Cache{Dir: file, Warnings: &warnings}
	got, err := Build(context.Background(), r, in)
	if err != nil {
		t.Fatalf("a cache that cannot be written failed the build: %v", err)
	}
	want, err := Build(context.Background(), r, testInput(t, reg.Host, "base/os:1", "kiln/b", "x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != want.Digest || !strings.Contains(warnings.String(), "warning: node import cache") {
		t.Errorf("digest %s (want %s), warnings %q", got.Digest, want.Digest, warnings.String())
	}
}

// TestBuildahPathNodeCheckSameWithCache: the buildah path's node check of
// a user Containerfile's image is the same without a cache, with an empty
// one and with the entry the first build stored, which the second build
// uses as it is; buildah is never given the cache folder.
func TestBuildahPathNodeCheckSameWithCache(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	imagetest.PushBusyboxBase(ctx, t, e, "base/busybox:1")
	r := registry.Remote{Insecure: []string{e.Registry.Host}}
	bb := buildah.Buildah{Env: e.Buildah.Env}
	input := func(repo string, cache *nodecache.Cache) BuildahInput {
		in := BuildahInput{BuildInput: testInput(t, e.Registry.Host, "base/busybox:1", repo, "from-buildah\n"),
			Containerfile: "RUN mkdir -p /var/lib/user && echo x > /var/lib/user/state\n"}
		in.NodeCache = cache
		return in
	}
	want, err := BuildWithBuildah(ctx, bb, r, input("kiln/plain", nil))
	if err != nil {
		t.Fatal(err)
	}
	var warnings bytes.Buffer
	cache := &nodecache.Cache{Dir: t.TempDir(), Warnings: &warnings}
	var entry os.FileInfo
	for i := range 2 {
		in := input(fmt.Sprintf("kiln/cached%d", i), cache)
		p, err := in.prepareBuildah(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := p.bud(t.TempDir(), "x"); err != nil || strings.Contains(fmt.Sprintf("%+v", b), cache.Dir) {
			t.Errorf("buildah's build names the cache folder %s: %+v (%v)", cache.Dir, b, err)
		}
		got, err := BuildWithBuildah(ctx, bb, r, in)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want.Lint, got.Lint); d != "" {
			t.Errorf("build %d: node check differs (-uncached +cached):\n%s", i, d)
		}
		ents, err := os.ReadDir(filepath.Join(cache.Dir, "nodeimport"))
		if err != nil || len(ents) != 1 {
			t.Fatalf("build %d: cache holds %v (%v), want one entry", i, ents, err)
		}
		fi, err := os.Stat(filepath.Join(cache.Dir, "nodeimport", ents[0].Name()))
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 && !os.SameFile(entry, fi) {
			t.Errorf("the second build rewrote the entry instead of using it")
		}
		entry = fi
	}
	if len(want.Lint.Findings) == 0 || warnings.Len() > 0 {
		t.Errorf("findings %v (want the user's /var warning), cache warnings %q", want.Lint.Findings, warnings.String())
	}
}

// TestBuildIndexOnCachedBase: on a multi-platform base, the cache holds
// one entry per platform, and the next build reads no base layer and
// pushes the index, with the node check, of a build without a cache.
func TestBuildIndexOnCachedBase(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	pushMultiPlatformBase(t, reg)
	cache := &nodecache.Cache{Dir: t.TempDir()}
	for i, wantBlobs := range []int{2 + 2*3, 2} { // configs, then each platform's 3 layers (2 random + the kernel)
		log := &requestLog{next: http.DefaultTransport, kind: map[string]int{}}
		in := testInput(t, reg.Host, "base/multi:1", fmt.Sprintf("kiln/cached%d", i), "x")
		in.NodeCache = cache
		got, err := Build(context.Background(), registry.Remote{Insecure: []string{reg.Host}, Transport: log}, in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Build(context.Background(), registry.Remote{Insecure: []string{reg.Host}}, testInput(t, reg.Host, "base/multi:1", fmt.Sprintf("kiln/plain%d", i), "x"))
		if err != nil {
			t.Fatal(err)
		}
		if n := log.kind["GET base/multi blobs"]; n != wantBlobs {
			t.Errorf("build %d read %d blobs of the base (%s); want %d", i, n, show(log.kind), wantBlobs)
		}
		if got.Digest != want.Digest {
			t.Errorf("build %d: %s with the cache, %s without", i, got.Digest, want.Digest)
		}
		if d := cmp.Diff(want.Lint, got.Lint); d != "" {
			t.Errorf("build %d: node check differs (-uncached +cached):\n%s", i, d)
		}
	}
	if ents, err := os.ReadDir(filepath.Join(cache.Dir, "nodeimport")); err != nil || len(ents) != 2 {
		t.Errorf("cache holds %v (%v), want one entry per platform", ents, err)
	}
}
