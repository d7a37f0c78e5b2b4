package examples_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/examples"
	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/osimage"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/nodesim"
)

// TestSampleInfraModuleLoadsOnTheBootedKernel is issue 31's acceptance:
// the sample's infra pool built as the pipeline builds it (kmod-build,
// kmod-sign, then image-build's buildah path on the kmod image, which
// swaps in kernel-rt), deployed on a simulated node (real ostree) that
// first installed the sample's base and then upgraded to the infra image.
// The booted kernel is the realtime one, and the host's modinfo, reading
// the booted deployment's modules folder for that kernel, finds
// kiln-hello under extra/, signed by the test's module key. (The DTK
// stand-in compiles against the host's kernel headers, so the module's
// vermagic is the host's: only a real DTK gives the realtime kernel's.)
func TestSampleInfraModuleLoadsOnTheBootedKernel(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	images, err := examples.Images()
	if err != nil {
		t.Fatal(err)
	}
	refs, err := examples.Push(t.Context(), e.Registry.Host, images)
	if err != nil {
		t.Fatal(err)
	}
	dtk, _ := env.PushDTK(t, e.Registry.Ref("openshift/driver-toolkit:"+examples.ReleaseVersion))
	work := t.TempDir()
	examples.BuildAndSignSampleKmods(t, e, refs, dtk, work)
	img := buildInfra(t, e, refs, work)

	base, err := examples.BaseImage()
	if err != nil {
		t.Fatal(err)
	}
	n := nodesim.New(t, nodesim.Options{})
	if _, err := n.Deploy(base); err != nil {
		t.Fatal(err)
	}
	v, err := n.Upgrade(img)
	if err != nil {
		t.Fatalf("upgrading the node to the infra image: %v", err)
	}
	t.Logf("node imported and deployed the infra image in %s", v.Took.Round(time.Millisecond))
	if v.Kernel != examples.RTKernelVersion {
		t.Fatalf("the node boots kernel %q, want the realtime %q", v.Kernel, examples.RTKernelVersion)
	}
	info := modinfoOnNode(t, v, v.Kernel, "kiln-hello")
	for _, want := range []string{
		"/lib/modules/" + v.Kernel + "/extra/kiln-hello.ko\n",
		"description:    kiln example day-0 module",
		"signer:         kiln examples signer",
		"sig_id:         PKCS#7",
	} {
		if !strings.Contains(info, want) {
			t.Errorf("modinfo on the booted deployment lacks %q:\n%s", want, info)
		}
	}
}

// buildInfra runs image-build for infra in work, after the kmod stages:
// the kmod image is the base, the sample's extensions image provides
// kernel-rt and usbguard.
func buildInfra(t *testing.T, e *env.Env, refs []string, work string) v1.Image {
	t.Helper()
	for _, kv := range e.Buildah.Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	results := filepath.Join(work, "image-results")
	o := &osimage.BuildOptions{Options: step.Options{Work: work, ResultsDir: results, Pool: "infra"},
		RegistryOptions: registry.RegistryOptions{Insecure: []string{e.Registry.Host}},
		Base:            refs[0], PayloadBase: refs[0], ExtensionsImage: refs[1],
		Repository: e.Registry.Host + "/kiln/infra", Source: imagebuild.DefaultSource, BuildahBin: "buildah"}
	var log bytes.Buffer
	if err := o.Run(t.Context(), step.Streams{Out: &log, Err: &log}); err != nil {
		t.Fatalf("image-build infra: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "base: kmod image") {
		t.Fatalf("image-build infra did not build on the kmod image:\n%s", log.String())
	}
	url, _ := os.ReadFile(filepath.Join(results, "IMAGE_URL"))
	digest, _ := os.ReadFile(filepath.Join(results, "IMAGE_DIGEST"))
	return examples.Pull(t, string(url)+"@"+string(digest))
}

// modinfoOnNode runs the host's modinfo on the booted deployment's
// modules folder for kver, exported to a temporary root; /lib is a
// symlink to usr/lib there, as on RHCOS, since kmod reads <root>/lib/modules.
func modinfoOnNode(t *testing.T, v *nodesim.View, kver, module string) string {
	t.Helper()
	root := t.TempDir()
	if err := v.Export("/usr/lib/modules/"+kver, root); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("usr/lib", filepath.Join(root, "lib")); err != nil {
		t.Fatal(err)
	}
	modinfo, err := env.LookTool("modinfo")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(modinfo, "-b", root, "-k", kver, module).CombinedOutput()
	if err != nil {
		t.Fatalf("modinfo -b <deployment> -k %s %s: %v\n%s", kver, module, err, out)
	}
	return string(out)
}
