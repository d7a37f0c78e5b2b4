package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// pushBusyboxBase pushes a from-scratch image with a static busybox as
// /bin/sh in one layer that buildah's own compression never reproduces:
// gzipped by go-containerregistry at the best level, or (uncompressed, as
// the sample's base) not compressed at all. A rebuild that compressed the
// base's layer again would get another digest.
func pushLayerBase(t *testing.T, host, repoTag string, uncompressed bool) v1.Image {
	t.Helper()
	busybox, err := env.LookTool("busybox")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "bin/sh", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))},
	} {
		h.ModTime = time.Unix(0, 0)
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tw.Write(bin); err != nil {
		t.Fatal(err)
	}
	writeStandInKernel(t, tw)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil },
		tarball.WithCompressionLevel(gzip.BestCompression))
	if err != nil {
		t.Fatal(err)
	}
	base := empty.Image
	if uncompressed {
		layer = static.NewLayer(buf.Bytes(), types.OCIUncompressedLayer)
		base = mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.Config(img, v1.Config{Labels: map[string]string{imagetest.VersionLabel: "9.6.20250101-0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(imagetest.MustRef(t, host+"/"+repoTag), img); err != nil {
		t.Fatal(err)
	}
	return img
}

// TestRebuildGivesThePushedDigest builds on both paths with pushes, then
// rebuilds the same inputs with Rebuild (the buildah path in another,
// fresh storage, at least a second later) and gets the pushed digests
// without pushing anything.
func TestRebuildGivesThePushedDigest(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bases := map[string]v1.Image{
		"gz":  pushLayerBase(t, e.Registry.Host, "base/gz:1", false),
		"tar": pushLayerBase(t, e.Registry.Host, "base/tar:1", true),
	}
	r := registry.Remote{Insecure: []string{e.Registry.Host}}

	type build struct {
		name, builder string
		in            BuildahInput
		res           *BuildResult
		base          v1.Image
	}
	var builds []build
	for _, base := range []string{"gz", "tar"} {
		fast := BuildahInput{BuildInput: testInput(t, e.Registry.Host, "base/"+base+":1", "kiln/fast-"+base, "fast\n")}
		res, err := Build(ctx, r, fast.BuildInput)
		if err != nil {
			t.Fatal(err)
		}
		builds = append(builds, build{"fast on " + base, "fast", fast, res, bases[base]})
		slow := BuildahInput{BuildInput: testInput(t, e.Registry.Host, "base/"+base+":1", "kiln/slow-"+base, "slow\n"),
			Containerfile: "RUN echo user-content > /user-was-here\n"}
		if res, err = BuildWithBuildah(ctx, buildah.Buildah{Env: e.Buildah.Env}, r, slow); err != nil {
			t.Fatal(err)
		}
		builds = append(builds, build{"buildah on " + base, "buildah", slow, res, bases[base]})
	}
	time.Sleep(1100 * time.Millisecond) // a leaked wall-clock second would show

	other := env.NewBuildah(t, env.BuildahOptions{InsecureRegistries: []string{e.Registry.Host}})
	for _, c := range builds {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			got, err := Rebuild(ctx, r, buildah.Buildah{Env: other.Env}, c.in, c.builder, work)
			if err != nil {
				t.Fatal(err)
			}
			if got.Digest != c.res.Digest {
				t.Errorf("rebuilt digest %s, pushed %s", got.Digest, c.res.Digest)
			}
			if d := c.res.Inputs.Diff(got.Inputs); d != "" {
				t.Errorf("rebuilt inputs differ: %s", d)
			}
			// The rebuilt image is readable in full and is what the
			// registry holds, byte for byte.
			pushed, err := remote.Image(imagetest.MustRef(t, c.res.Ref))
			if err != nil {
				t.Fatal(err)
			}
			assertSameImage(t, got.Image, pushed)
			// The base's layer is the base's blob, compressed or not:
			// mounted by the push, never compressed again.
			bm, _ := c.base.Manifest()
			gm, err := got.Image.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			mt := gm.Layers[0].MediaType
			if gm.Layers[0].Digest != bm.Layers[0].Digest || (mt != bm.Layers[0].MediaType && mt != buildah.OCILayerType(bm.Layers[0].MediaType)) {
				t.Errorf("first layer %s %s, the base's is %s %s", gm.Layers[0].MediaType, gm.Layers[0].Digest, bm.Layers[0].MediaType, bm.Layers[0].Digest)
			}
		})
	}
	tags, err := remote.List(imagetest.MustRef(t, e.Registry.Host+"/kiln/slow-gz:x").Context())
	if err != nil || len(tags) != 1 {
		t.Errorf("tags of kiln/slow %v (%v): want only the build's, the rebuild pushes nothing", tags, err)
	}
}

// assertSameImage compares manifests, configs and every layer's bytes.
func assertSameImage(t *testing.T, got, want v1.Image) {
	t.Helper()
	gm, err := got.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	wm, _ := want.RawManifest()
	if !bytes.Equal(gm, wm) {
		t.Fatalf("manifests differ:\n%s\n%s", gm, wm)
	}
	gc, _ := got.RawConfigFile()
	wc, _ := want.RawConfigFile()
	if !bytes.Equal(gc, wc) {
		t.Fatalf("configs differ:\n%s\n%s", gc, wc)
	}
	layers, err := got.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		d, _ := l.Digest()
		rc, err := l.Compressed()
		if err != nil {
			t.Fatalf("layer %s: %v", d, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || sha256Of(b) != d.String() {
			t.Errorf("layer %s reads as %s (%v)", d, sha256Of(b), err)
		}
	}
}

func sha256Of(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// TestBudEnvReachesTheFinalStage builds a two-stage Containerfile whose
// stages do not declare the variable: Bud.Env reaches the final stage's
// RUN steps (an undeclared --build-arg would not). buildah 1.28 gives
// --env to the final stage only; the builder stage's value is logged, so
// a buildah that passes it everywhere shows here (kmodbuild.BuildEnv's comment
// says what that changes).
func TestBudEnvReachesTheFinalStage(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	pushLayerBase(t, e.Registry.Host, "base/bb:1", false)
	base := e.Registry.Host + "/base/bb:1"
	dir := t.TempDir()
	cf := "FROM " + base + " AS builder\nRUN echo \"$KILN_TEST_VAR\" > /first\n" +
		"FROM " + base + "\nCOPY --from=builder /first /first\nRUN echo \"$KILN_TEST_VAR\" > /second\n"
	if err := os.WriteFile(filepath.Join(dir, "Containerfile"), []byte(cf), 0o644); err != nil {
		t.Fatal(err)
	}
	r := registry.Remote{Insecure: []string{e.Registry.Host}}
	out, err := buildah.Buildah{Env: e.Buildah.Env}.BudLocal(t.Context(), r, buildah.Bud{
		Dir: dir, Containerfile: filepath.Join(dir, "Containerfile"), Target: e.Registry.Host + "/kiln/env:x",
		Env: map[string]string{"KILN_TEST_VAR": "reached"}, Pulls: []string{base},
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	layers, err := out.Image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{}
	for _, l := range layers {
		for k, v := range imagetest.LayerEntries(t, l) {
			all[k] = v.Data
		}
	}
	if all["second"] != "reached\n" {
		t.Errorf("/second = %q, want the variable's value", all["second"])
	}
	t.Logf("the builder stage saw %q", all["first"])
}

// TestRebuildFastOnAnIndexGivesThePushedIndex rebuilds the fast path on a
// multi-platform base: the index digest Build pushed, nothing pushed.
func TestRebuildFastOnAnIndexGivesThePushedIndex(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	idx, err := random.Index(32<<10, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	withPlat := mutate.IndexMediaType(emptyIndex(), types.OCIImageIndex)
	for i, arch := range []string{"amd64", "arm64"} {
		img, _ := idx.Image(im.Manifests[i].Digest)
		withPlat = mutate.AppendManifests(withPlat, mutate.IndexAddendum{Add: env.WithKernel(t, img), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	if err := remote.WriteIndex(imagetest.MustRef(t, reg.Host+"/base/multi:1"), withPlat); err != nil {
		t.Fatal(err)
	}
	r := registry.Remote{Insecure: []string{reg.Host}}
	in := BuildahInput{BuildInput: testInput(t, reg.Host, "base/multi:1", "kiln/multi", "x")}
	res, err := Build(t.Context(), r, in.BuildInput)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Rebuild(t.Context(), r, buildah.Buildah{}, in, "fast", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got.Index == nil || got.Image != nil || got.Digest != res.Digest {
		t.Errorf("rebuilt index %v image %v digest %s, want the pushed index %s", got.Index != nil, got.Image != nil, got.Digest, res.Digest)
	}
}

// TestRebuildRefusesWhatNoBuilderMakes: an unknown builder, and a fast
// rebuild of inputs naming a Containerfile (which only buildah builds).
func TestRebuildRefusesWhatNoBuilderMakes(t *testing.T) {
	in := BuildahInput{BuildInput: testInput(t, "127.0.0.1:1", "base/os:1", "kiln/os", "x")}
	user := in
	user.Containerfile = "RUN true\n"
	for _, c := range []struct {
		name, builder string
		in            BuildahInput
		want          string
	}{
		{"unknown builder", "docker", in, `builder "docker", want fast or buildah`},
		{"fast with a Containerfile", "fast", user, "builder fast has no extensions image or Containerfile"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Rebuild(t.Context(), registry.Remote{}, buildah.Buildah{}, c.in, c.builder, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// writeStandInKernel adds the stand-in kernel the node import check
// requires to a base's tar.
func writeStandInKernel(t *testing.T, tw *tar.Writer) {
	t.Helper()
	kdir := "usr/lib/modules/" + env.StandInKernel + "/"
	for _, d := range []string{"usr/", "usr/lib/", "usr/lib/modules/", kdir} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	body := []byte("stand-in kernel\n")
	if err := tw.WriteHeader(&tar.Header{Name: kdir + "vmlinuz", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
}
