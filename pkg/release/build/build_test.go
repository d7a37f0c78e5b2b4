package build_test

import (
	"runtime"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/release/build"
	"github.com/kiln-dev/kiln/test/env"
)

// buildDigests builds both images from this checkout into a fresh folder
// and returns their digests.
func buildDigests(t *testing.T) map[string]v1.Hash {
	t.Helper()
	imgs, _, err := build.Build(t.Context(), build.BuildOptions{Root: env.RepoRoot(), StepsBase: env.StepsBase(t),
		Platform: build.Platform{OS: "linux", Arch: runtime.GOARCH}, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1.Hash{}
	for n, img := range map[string]v1.Image{build.TriggerName: imgs.Trigger, build.StepsName: imgs.Steps} {
		if out[n], err = img.Digest(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Both images are built twice, each time from a fresh folder (binaries
// rebuilt, layers rewritten), on the cached steps base: the digests match.
func TestBuildTwiceFromCleanFoldersGivesTheSameDigests(t *testing.T) {
	first, second := buildDigests(t), buildDigests(t)
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("two clean builds of one checkout differ (-first +second):\n%s", diff)
	}
}

// The trigger's image is ko's layout on no base, non-root; the steps
// image is the base rootfs plus kiln-steps, run as root, with buildah's
// chroot isolation; neither config has a creation time.
func TestBuildImagesHaveTheReleaseConfig(t *testing.T) {
	imgs, _, err := build.Build(t.Context(), build.BuildOptions{Root: env.RepoRoot(), StepsBase: env.StepsBase(t),
		Platform: build.Platform{OS: "linux", Arch: "amd64"}, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Layers           int
		Entrypoint       []string
		User, OS, Arch   string
		Created, Buildah bool
	}
	sum := func(img v1.Image) summary {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		ls, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		return summary{Layers: len(ls), Entrypoint: cf.Config.Entrypoint, User: cf.Config.User, OS: cf.OS, Arch: cf.Architecture,
			Created: !cf.Created.IsZero(), Buildah: slices.Contains(cf.Config.Env, "BUILDAH_ISOLATION=chroot")}
	}
	got := map[string]summary{build.TriggerName: sum(imgs.Trigger), build.StepsName: sum(imgs.Steps)}
	want := map[string]summary{
		build.TriggerName: {Layers: 1, Entrypoint: []string{"/ko-app/kiln-trigger"}, User: "65532", OS: "linux", Arch: "amd64"},
		build.StepsName:   {Layers: 2, Entrypoint: []string{"/ko-app/kiln-steps"}, OS: "linux", Arch: "amd64", Buildah: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("image configs (-want +got):\n%s", diff)
	}
}
