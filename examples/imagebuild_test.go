package examples

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/cmd/cli"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/osimage"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
)

// renderInto runs the render stage for pool into work.
func renderInto(t *testing.T, work, pool string) {
	t.Helper()
	var out, errb bytes.Buffer
	args := []string{workspace.StageRender, "--pool=" + pool, "--source=dir:" + clusterDir, "--work=" + work, "--results-dir=" + filepath.Join(work, "results")}
	if code := cli.Execute(context.Background(), cli.NewSteps(), args, &out, &errb); code != exitcode.ExitOK {
		t.Fatalf("render %s: exit %d\n%s%s", pool, code, out.String(), errb.String())
	}
}

// TestImageBuildFromSample layers each pool's rendered config on the
// locally made base in a real registry, as make run does: worker and
// master take the fast path (no buildah) and their images carry the
// rendered files over the base's os-release; infra needs the buildah path,
// which runs on the base's stand-in userland (examples/ostools.go).
func TestImageBuildFromSample(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	images, err := Images()
	if err != nil {
		t.Fatal(err)
	}
	refs, err := Push(t.Context(), e.Registry.Host, images)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range e.Buildah.Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	build := func(pool, extensions string) (map[string]string, string, error) {
		work := t.TempDir()
		renderInto(t, work, pool)
		results := filepath.Join(work, "out")
		o := &osimage.BuildOptions{Options: step.Options{Work: work, ResultsDir: results, Pool: pool},
			RegistryOptions: registry.RegistryOptions{Insecure: []string{e.Registry.Host}},
			Base:            refs[0], PayloadBase: refs[0], ExtensionsImage: extensions,
			Repository: e.Registry.Host + "/kiln/" + pool, Source: imagebuild.DefaultSource, BuildahBin: "buildah"}
		var log bytes.Buffer
		err := o.Run(t.Context(), step.Streams{Out: &log, Err: &log})
		res := map[string]string{}
		for _, n := range []string{"IMAGE_URL", "IMAGE_DIGEST", "REUSED"} {
			if v, rerr := os.ReadFile(filepath.Join(results, n)); rerr == nil {
				res[n] = string(v)
			}
		}
		if res["IMAGE_URL"] != "" {
			res["image"] = res["IMAGE_URL"] + "@" + res["IMAGE_DIGEST"]
		}
		return res, log.String(), err
	}
	for _, pool := range []string{"worker", "master"} {
		res, log, err := build(pool, refs[1])
		if err != nil {
			t.Fatalf("image-build %s: %v\n%s", pool, err, log)
		}
		if res["REUSED"] != "false" || res["IMAGE_URL"] != e.Registry.Host+"/kiln/"+pool || !strings.HasPrefix(res["IMAGE_DIGEST"], "sha256:") {
			t.Fatalf("%s results %v", pool, res)
		}
		img := pull(t, res["image"])
		for path, want := range map[string]string{
			"etc/chrony.conf":                         "server clock1.example.com iburst",
			"usr/lib/os-release":                      `OSTREE_VERSION="` + OSVersion + `"`,
			"etc/machine-config-daemon/currentconfig": "rendered-" + pool + "-",
		} {
			b, err := payload.ReadImageFile(img, path)
			if err != nil || !strings.Contains(string(b), want) {
				t.Errorf("%s image %s: %q (%v), want %q", pool, path, b, err, want)
			}
		}
		cf, err := img.ConfigFile()
		if err != nil || cf.Config.Labels["kiln.dev/pool"] != pool || cf.Config.Labels["ostree.linux"] != KernelVersion {
			t.Errorf("%s image labels %v (%v)", pool, cf.Config.Labels, err)
		}
	}
	// infra: the buildah path on the sample's stand-in userland: usbguard
	// installed and enabled, the default kernel swapped for kernel-rt.
	// An extensions image without the packages (the base stands in for
	// one): the stand-in rpm-ostree refuses, the build fails, no results.
	res, log, err := build("infra", refs[0])
	if err == nil || !strings.Contains(log+err.Error(), "package usbguard not found") {
		t.Fatalf("infra image-build with no packages in the extensions image: err %v\n%s", err, log)
	}
	if res["IMAGE_URL"] != "" {
		t.Errorf("infra wrote results after failing: %v", res)
	}
	res, log, err = build("infra", refs[1])
	if err != nil {
		t.Fatalf("infra image-build: %v\n%s", err, log)
	}
	if !strings.Contains(log, "buildah path") || res["IMAGE_URL"] != e.Registry.Host+"/kiln/infra" {
		t.Fatalf("infra results %v\n%s", res, log)
	}
	files := env.Flatten(t, pull(t, res["image"]))
	for path, want := range map[string]string{
		"usr/share/kiln-sample/rpmdb/usbguard":                   "usr/bin/usbguard",
		"usr/share/kiln-sample/rpmdb/kernel-rt-core":             "usr/lib/modules/" + RTKernelVersion + "/vmlinuz",
		"usr/lib/modules/" + RTKernelVersion + "/vmlinuz":        "kernel-rt",
		"etc/systemd/system/basic.target.wants/usbguard.service": "-> /usr/lib/systemd/system/usbguard.service",
		"etc/chrony.conf": "server clock1.example.com iburst",
	} {
		if got, ok := files[path]; !ok || !strings.Contains(got, want) {
			t.Errorf("infra image %s = %q (present %v), want it to contain %q\n%s", path, got, ok, want, log)
		}
	}
	for _, gone := range []string{"usr/share/kiln-sample/rpmdb/kernel-core", "usr/lib/modules/" + KernelVersion + "/vmlinuz",
		"etc/yum.repos.d/kiln-extensions.repo"} {
		if _, ok := files[gone]; ok {
			t.Errorf("infra image still has %s", gone)
		}
	}
}

func pull(t *testing.T, url string) v1.Image {
	t.Helper()
	ref, err := name.ParseReference(url, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatalf("pulling %s: %v", url, err)
	}
	return img
}
