package osimage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/test/env"
)

// pushBusyboxBase builds a from-scratch image holding a static busybox as
// /bin/sh (no rpm-ostree: not CoreOS) and pushes it.
func pushBusyboxBase(ctx context.Context, t *testing.T, e *env.Env, repoTag string) string {
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

func TestBuildWithBuildah(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	base := pushBusyboxBase(ctx, t, e, "base/busybox:1")
	r := registry.Remote{Insecure: []string{e.Registry.Host}}
	bb := Buildah{Env: e.Buildah.Env}

	in := BuildahInput{BuildInput: testInput(t, e.Registry.Host, "base/busybox:1", "kiln/bud", "from-buildah\n"),
		Containerfile: "RUN echo user-content > /user-was-here\n"}
	res, err := BuildWithBuildah(ctx, bb, r, in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reused || !strings.HasPrefix(res.Ref, e.Registry.Host+"/kiln/bud@sha256:") {
		t.Fatalf("result %+v", res)
	}
	img, err := remote.Image(mustRef(t, res.Ref))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := img.Manifest()
	if m.Annotations[LabelFingerprint] != res.Fingerprint || m.Annotations[AnnotationSource] != DefaultSource {
		t.Errorf("manifest annotations %v, want the fingerprint and the source", m.Annotations)
	}
	cf, _ := img.ConfigFile()
	if cf.Config.Labels[LabelFingerprint] != res.Fingerprint || cf.Config.Labels[LabelPool] != "worker" {
		t.Errorf("labels %v", cf.Config.Labels)
	}
	// Which buildah built it is not part of the image: another release
	// must give the same digest.
	if v, ok := cf.Config.Labels["io.buildah.version"]; ok {
		t.Errorf("the image carries buildah's identity label (%s)", v)
	}
	if !strings.HasPrefix(cf.Config.Labels[LabelBaseImage], strings.Split(base, ":1")[0]+"@sha256:") {
		t.Errorf("base label %q", cf.Config.Labels[LabelBaseImage])
	}
	layers, _ := img.Layers()
	all := map[string]string{}
	for _, l := range layers {
		for k, v := range layerEntries(t, l) {
			all[k] = v.data
			// ADD of our tar keeps the owners and modes of the config.
			if k == "var/usrlocal/bin/tool" && (v.hdr.Uid != 1000 || v.hdr.Gid != 1001 || v.hdr.Mode&0o777 != 0o755) {
				t.Errorf("%s: %d:%d %o, want 1000:1001 0755", k, v.hdr.Uid, v.hdr.Gid, v.hdr.Mode)
			}
		}
	}
	if _, ok := all["var/usrlocal/bin/tool"]; !ok {
		t.Error("var/usrlocal/bin/tool missing from the buildah image")
	}
	if all["etc/motd"] != "from-buildah\n" || all["user-was-here"] != "user-content\n" {
		t.Errorf("image lacks the config or the user content: motd=%q user=%q", all["etc/motd"], all["user-was-here"])
	}
	if !strings.Contains(all["etc/machine-config-daemon/currentconfig"], "rendered-worker-0123") {
		t.Error("currentconfig missing")
	}

	// Reuse needs kiln's signature and attestation of these inputs.
	key := newCosignKey(t)
	key.sign(t, r, res)
	in.Identity = key.id
	again, err := BuildWithBuildah(ctx, bb, r, in)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Reused || again.Digest != res.Digest {
		t.Errorf("second build: %+v, want reuse of %s", again, res.Digest)
	}

	// Extensions on a base without rpm-ostree: a clear failure, no tag.
	ext := BuildahInput{BuildInput: testInput(t, e.Registry.Host, "base/busybox:1", "kiln/ext", "x"), ExtensionsImage: base}
	ext.Rendered.Spec.Extensions = []string{"usbguard"}
	_, err = BuildWithBuildah(ctx, bb, r, ext)
	if err == nil || !strings.Contains(err.Error(), "the base image has no rpm-ostree") {
		t.Fatalf("error %v: want the rpm-ostree message", err)
	}
	if tags, err := remote.List(mustRef(t, e.Registry.Host+"/kiln/ext:x").Context()); err == nil && len(tags) > 0 {
		t.Errorf("failed build left tags %v", tags)
	}
}

// TestImageBuildStepBuildahDispatch checks that image-build takes the
// buildah path for user Containerfile content.
func TestImageBuildStepBuildahDispatch(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pushBusyboxBase(ctx, t, e, "base/busybox:1")
	for _, kv := range e.Buildah.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && (strings.HasPrefix(k, "CONTAINERS_") || k == "TMPDIR") {
			t.Setenv(k, v)
		}
	}
	work, results := t.TempDir(), t.TempDir()
	writeRendered(t, work, renderedMC(t, "rendered-worker-abc", sampleConfig(t, "hi")))
	user := filepath.Join(t.TempDir(), "Containerfile")
	os.WriteFile(user, []byte("RUN echo agent > /agent\n"), 0o644)
	o := &BuildOptions{Options: step.Options{Work: work, ResultsDir: results, Pool: "worker"},
		RegistryOptions: registry.RegistryOptions{Insecure: []string{e.Registry.Host}},
		Base:            e.Registry.Ref("base/busybox:1"), Repository: e.Registry.Ref("kiln/os"), Source: DefaultSource,
		ContainerfilePath: user, BuildahBin: "buildah"}
	var out bytes.Buffer
	if err := o.Run(ctx, step.Streams{Out: &out, Err: &out}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "buildah path") {
		t.Errorf("output does not mention the buildah path:\n%s", out.String())
	}
	img, err := remote.Image(mustRef(t, readFile(t, filepath.Join(results, "IMAGE_URL"))+"@"+readFile(t, filepath.Join(results, "IMAGE_DIGEST"))))
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := img.Layers()
	if files := layerFiles(t, layers[len(layers)-1]); files["agent"] != "agent\n" {
		t.Errorf("last layer is not the user's: %v", files)
	}
}
