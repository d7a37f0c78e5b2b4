package kmod_test

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

// markerDockerfile builds on OS_AUTO alone (no driver toolkit): enough
// for a real buildah build whose output kiln must prove before reuse.
const markerDockerfile = `ARG OS_AUTO
FROM ${OS_AUTO}
ARG KERNEL_FULL_VERSION
RUN busybox mkdir -p /opt/kiln && echo "built for ${KERNEL_FULL_VERSION}" > /opt/kiln/built
`

// TestKmodBuildReusesOnlyWhatKilnProves plays an attacker with push
// access against kmod-build (build section only, so it pushes to
// containerImage): the image at containerImage is reused only with kiln's
// attestation for the current inputs; an image with kiln's labels copied
// onto it, or with kiln's signature and attestation copied from another
// digest, is built over, and the run says why.
func TestKmodBuildReusesOnlyWhatKilnProves(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	// OS_AUTO by tag: kmod-build resolves it to a digest once and builds
	// FROM that digest.
	osTag := e.Registry.Ref("payload/rhel-coreos:test")
	env.PushOSImage(t, osTag, kmodtest.Kernel)
	f := newFixture(t, e, osTag, "", markerDockerfile)
	f.md.Spec.OSMapping.Sign = nil
	target := f.md.Spec.OSMapping.ContainerImage

	log := mustBuild(t, f)
	genuine := f.image(t)
	if !strings.Contains(log, "building "+target) || f.result(t, "REUSE_REJECTED") != "" {
		t.Fatalf("first kmod-build did not build into the free %s; log:\n%s", target, log)
	}
	if rep := readReport(t, f, work.KmodBuildFile); rep.Inputs == nil || !strings.Contains(rep.Inputs.Parameters["osImage"], "@sha256:") {
		t.Fatalf("build.json inputs %+v, want OS_AUTO by digest", rep.Inputs)
	}

	t.Run("kiln's own attested image is reused without building", func(t *testing.T) {
		log := mustBuild(t, f)
		if f.image(t) != genuine || strings.Contains(log, "building ") || !strings.Contains(log, "for these inputs; reused") {
			t.Fatalf("kmod-build: %s, want %s reused; log:\n%s", f.image(t), genuine, log)
		}
		if rep := readReport(t, f, work.KmodBuildFile); !rep.Reused {
			t.Errorf("build.json does not say reused: %+v", rep)
		}
	})

	// The attacker's image: kiln's image plus a file, so it keeps every
	// label kiln set (pool, kernel version, the builder's).
	evil := withFile(t, pull(t, genuine), "opt/kiln/backdoor", "payload\n")

	t.Run("copied labels without an attestation are built over", func(t *testing.T) {
		planted := push(t, target, evil)
		log := mustBuild(t, f)
		wantRejectedIn(t, f, work.KmodBuildFile, log, target+" holds "+planted+" "+notProven)
		wantNoBackdoor(t, f, planted)
	})

	t.Run("signature and attestation copied from another digest are built over", func(t *testing.T) {
		planted := push(t, target, evil)
		copySignatureTags(t, genuine, planted)
		log := mustBuild(t, f)
		wantRejectedIn(t, f, work.KmodBuildFile, log, target+" holds "+planted+" "+notProven)
		wantNoBackdoor(t, f, planted)
	})

	t.Run("a moved OS_AUTO tag changes the inputs and rebuilds from the new digest", func(t *testing.T) {
		before := f.image(t)
		moved := env.PushOSImage(t, osTag, kmodtest.Kernel+".1")
		log := mustBuild(t, f)
		wantRejectedIn(t, f, work.KmodBuildFile, log, target+" holds "+before[strings.Index(before, "@")+1:]+" "+notProven+": parameter buildArgs")
		if f.image(t) == before {
			t.Errorf("kmod-build kept %s after OS_AUTO moved; log:\n%s", before, log)
		}
		if rep := readReport(t, f, work.KmodBuildFile); rep.Inputs.Parameters["osImage"] != moved || rep.Kernel != kmodtest.Kernel+".1" {
			t.Errorf("build.json osImage %q kernel %q, want %s and %s.1", rep.Inputs.Parameters["osImage"], rep.Kernel, moved, kmodtest.Kernel)
		}
	})
}

func mustBuild(t *testing.T, f *fixture) string {
	t.Helper()
	var log bytes.Buffer
	if err := f.build(t, &log); err != nil {
		t.Fatalf("kmod-build: %v\n%s", err, log.String())
	}
	return log.String()
}

func wantNoBackdoor(t *testing.T, f *fixture, planted string) {
	t.Helper()
	if f.result(t, "KMOD_IMAGE_DIGEST") == planted {
		t.Fatalf("kmod-build reused the planted %s", planted)
	}
	files, _ := kmodtest.FlattenImage(t, pull(t, f.image(t)))
	if _, ok := files["opt/kiln/backdoor"]; ok {
		t.Errorf("%s carries the planted file", f.image(t))
	}
	if got := string(files["opt/kiln/built"]); got != "built for "+kmodtest.Kernel+"\n" {
		t.Errorf("%s /opt/kiln/built = %q", f.image(t), got)
	}
}

// withFile appends a layer holding one file; the config, labels
// included, is kept.
func withFile(t *testing.T, img v1.Image, path, content string) v1.Image {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: path, Mode: 0o755, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte(content))
	_ = tw.Close()
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	out, err := mutate.AppendLayers(img, l)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
