package kmod_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/kmodbuild"
	"github.com/kiln-dev/kiln/pkg/modsign"
	"github.com/kiln-dev/kiln/pkg/registry"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

// TestRebuildUnsignedAndResignGiveThePushedDigests runs kmod-build (with
// a build secret) and kmod-sign, then rebuilds the unsigned image from
// kmod-build's recorded inputs in another, fresh buildah storage without
// pushing, and re-signs it with the pushed image's signatures: both give
// the pushed digests. Without the secret's file the rebuild says which
// secret it needs. The compiled module carries no path of the host.
func TestRebuildUnsignedAndResignGiveThePushedDigests(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	dtk, kver := env.PushDTK(t, e.Registry.Ref("payload/driver-toolkit:test"))
	osImage := env.PushOSImage(t, e.Registry.Ref("payload/rhel-coreos:test"), kver)
	f := newFixture(t, e, osImage, dtk, seedDockerfile())
	var log bytes.Buffer
	if err := f.build(t, &log); err != nil {
		t.Fatalf("kmod-build: %v\n%s", err, log.String())
	}
	if err := f.sign(t, &log); err != nil {
		t.Fatalf("kmod-sign: %v\n%s", err, log.String())
	}
	built, signed := readReport(t, f, workspace.KmodBuildFile), readReport(t, f, "sign.json")

	r := registry.Remote{Insecure: []string{e.Registry.Host}}
	other := env.NewBuildah(t, env.BuildahOptions{InsecureRegistries: []string{e.Registry.Host}})
	bb := buildah.Buildah{Env: other.Env}
	_, err := kmodbuild.RebuildUnsigned(t.Context(), r, bb, *built.Inputs, t.TempDir(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), `spec.osMapping.build.secrets[0].name "build-secret": not mounted: no folder build-secret/ and no file build-secret_<key>`) {
		t.Fatalf("rebuild without the secret's file: %v", err)
	}
	secrets := t.TempDir()
	writeFile(t, filepath.Join(secrets, "build-secret_token"), buildSecretValue)
	unsigned, err := kmodbuild.RebuildUnsigned(t.Context(), r, bb, *built.Inputs, secrets, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if unsigned.Digest.String() != built.Digest {
		t.Errorf("kmod-build pushed %s, the rebuild gives %s", built.Digest, unsigned.Digest)
	}
	if d := built.Inputs.Diff(unsigned.Inputs); d != "" {
		t.Errorf("rebuild inputs differ: %s", d)
	}
	resigned, err := modsign.Resign(unsigned.Image, pull(t, signed.Image), *signed.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	if resigned.Digest.String() != signed.Digest {
		t.Errorf("kmod-sign pushed %s, re-signing gives %s", signed.Digest, resigned.Digest)
	}

	files, _ := kmodtest.FlattenImage(t, unsigned.Image)
	var mod []byte
	for p, b := range files {
		if strings.HasSuffix(p, ".ko") {
			mod = b
		}
	}
	if mod == nil {
		t.Fatal("no module in the rebuilt image")
	}
	// The build context and storage are host folders under TMPDIR; the
	// module is compiled in the container's WORKDIR.
	for _, host := range []string{os.TempDir(), other.Root, f.work} {
		if bytes.Contains(mod, []byte(host)) {
			t.Errorf("the module contains the host path %s", host)
		}
	}
}
