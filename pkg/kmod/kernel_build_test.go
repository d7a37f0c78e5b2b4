package kmod_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/kmodbuild"
	"github.com/kiln-dev/kiln/pkg/modsign"
	"github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

// rtDockerfile builds like the sample's: the driver toolkit's headers of
// KERNEL_FULL_VERSION (RHCOS's DTK keeps kernel-rt-devel's beside
// kernel-devel's under /usr/src/kernels), else the stand-in's Debian tree.
func rtDockerfile() string {
	return strings.Replace(seedDockerfile(),
		"RUN make -s -C /usr/src/linux-headers-${KERNEL_FULL_VERSION} M=$PWD modules",
		`RUN ksrc=/usr/src/kernels/${KERNEL_FULL_VERSION}; [ -d "$ksrc" ] || ksrc=$(ls -d /usr/src/linux-headers-*-amd64 | tail -n1); make -s -C "$ksrc" M=$PWD modules`, 1)
}

// TestKmodBuildForRealtimePool: with the pool's rendered config saying
// kernelType realtime, kmod-build builds for the realtime kernel the
// driver toolkit's release file names (KERNEL_FULL_VERSION, the kernel
// label, the report), and kmod-sign places the signed module under that
// kernel's folder: modinfo finds it by name for the realtime kernel,
// nothing is left under /opt, and the default kernel's folder gets none.
func TestKmodBuildForRealtimePool(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	_, kver := env.PushDTK(t, e.Registry.Ref("payload/driver-toolkit:plain"))
	rt := strings.TrimSuffix(kver, "-amd64") + "-rt-amd64"
	rel, _ := json.Marshal(kmodbuild.DTKRelease{KernelVersion: kver, RTKernelVersion: rt})
	dtk := push(t, e.Registry.Ref("payload/driver-toolkit:test"),
		withFile(t, pull(t, e.Registry.Ref("payload/driver-toolkit:plain")), kmodbuild.DTKReleaseFile, string(rel)))
	osImage := env.PushOSImage(t, e.Registry.Ref("payload/rhel-coreos:test"), kver)
	f := newFixture(t, e, osImage, e.Registry.Ref("payload/driver-toolkit")+"@"+dtk, rtDockerfile())
	mc := renderedWithFile(t, "/etc/kiln-kmod.conf", "x\n")
	mc.Spec.KernelType = "realtime"
	b, err := json.Marshal(mc)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, work.Workspace{Root: f.work}.RenderedPath(), string(b))

	var log bytes.Buffer
	if err := f.build(t, &log); err != nil {
		t.Fatalf("kmod-build: %v\n%s", err, log.String())
	}
	if want := "for kernel " + rt + ", kernelType realtime (spec.kernelType of " + mc.Name + ")"; !strings.Contains(log.String(), want) {
		t.Errorf("kmod-build log lacks %q:\n%s", want, log.String())
	}
	if rep := readReport(t, f, work.KmodBuildFile); rep.Kernel != rt || rep.Inputs.Parameters["kernelVersion"] != rt {
		t.Errorf("build report kernel %q, inputs %q; want %s", rep.Kernel, rep.Inputs.Parameters["kernelVersion"], rt)
	}
	unsigned := pull(t, f.image(t))
	if cf, _ := unsigned.ConfigFile(); cf.Config.Labels[kmodbuild.KernelLabel] != rt {
		t.Errorf("unsigned image label %s = %q, want %s", kmodbuild.KernelLabel, cf.Config.Labels[kmodbuild.KernelLabel], rt)
	}

	log.Reset()
	if err := f.sign(t, &log); err != nil {
		t.Fatalf("kmod-sign: %v\n%s", err, log.String())
	}
	ref, err := name.ParseReference(f.image(t), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	root := kmodtest.ExtractRoot(t, signed)
	kmodtest.WantBooted(t, root, rt, map[string]string{"kiln-hello": "kiln day-0 signer"})
	placed, err := modsign.PlacedModules(signed, rt)
	if diff := cmp.Diff([]string{"/usr/lib/modules/" + rt + "/extra/kiln-hello.ko"}, placed); err != nil || diff != "" {
		t.Errorf("PlacedModules(%s) (-want +got), %v:\n%s", rt, err, diff)
	}
	if _, err := os.Stat(filepath.Join(root, "usr/lib/modules", kver, "extra")); err == nil {
		t.Errorf("the default kernel %s got an extra/ folder", kver)
	}
	rep := readReport(t, f, "sign.json")
	if rep.Kernel != rt || rep.Placement == nil {
		t.Fatalf("sign report kernel %q placement %v, want kernel %s and a placement", rep.Kernel, rep.Placement, rt)
	}
	wantMoves := []modsign.Move{{From: "/opt/lib/modules/" + rt + "/kiln-hello.ko", To: "/usr/lib/modules/" + rt + "/extra/kiln-hello.ko", Signed: true}}
	if diff := cmp.Diff(wantMoves, rep.Placement.Modules); diff != "" {
		t.Errorf("sign report placement (-want +got):\n%s", diff)
	}
	if !slices.Contains(rep.Placement.Depmod, "/usr/lib/modules/"+rt+"/modules.dep") {
		t.Errorf("sign report depmod files %v lack modules.dep", rep.Placement.Depmod)
	}
}
