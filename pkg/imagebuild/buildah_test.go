package imagebuild

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

func TestBuildWithBuildah(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	base := imagetest.PushBusyboxBase(ctx, t, e, "base/busybox:1")
	r := registry.Remote{Insecure: []string{e.Registry.Host}}
	bb := buildah.Buildah{Env: e.Buildah.Env}

	in := BuildahInput{BuildInput: testInput(t, e.Registry.Host, "base/busybox:1", "kiln/bud", "from-buildah\n"),
		Containerfile: "RUN echo user-content > /user-was-here\n"}
	res, err := BuildWithBuildah(ctx, bb, r, in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reused || !strings.HasPrefix(res.Ref, e.Registry.Host+"/kiln/bud@sha256:") {
		t.Fatalf("result %+v", res)
	}
	img, err := remote.Image(imagetest.MustRef(t, res.Ref))
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
		for k, v := range imagetest.LayerEntries(t, l) {
			all[k] = v.Data
			// ADD of our tar keeps the owners and modes of the config.
			if k == "var/usrlocal/bin/tool" && (v.Hdr.Uid != 1000 || v.Hdr.Gid != 1001 || v.Hdr.Mode&0o777 != 0o755) {
				t.Errorf("%s: %d:%d %o, want 1000:1001 0755", k, v.Hdr.Uid, v.Hdr.Gid, v.Hdr.Mode)
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
	key := imagetest.NewCosignKey(t)
	key.Sign(t, r, res.Ref, res.Inputs)
	in.Identity = key.ID
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
	if tags, err := remote.List(imagetest.MustRef(t, e.Registry.Host+"/kiln/ext:x").Context()); err == nil && len(tags) > 0 {
		t.Errorf("failed build left tags %v", tags)
	}
}
