package kmod_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

func TestAheadRefNamesTheTargetKernelsTagInTheSameRepository(t *testing.T) {
	long := strings.Repeat("k", 140)
	in := trust.Inputs{BuildType: "https://kiln.dev/kmod-build/v1", Parameters: map[string]string{"format": "kiln-kmod-build/1"}}
	fp := "-" + in.Fingerprint()[:12]
	tests := []struct {
		name, ref, kernel, want, wantErr string
		inputs                           *trust.Inputs // nil: in
		cut                              bool          // want is the prefix of a 128-character tag
	}{
		{name: "tag, kernel and inputs", ref: "quay.io/acme/kmods:414", kernel: "5.14.0-427.13.1.el9_4.x86_64",
			want: "quay.io/acme/kmods:414-5.14.0-427.13.1.el9_4.x86_64" + fp},
		{name: "characters a tag may not hold become _", ref: "quay.io/acme/kmods:v1", kernel: "6.1.0+rt/7",
			want: "quay.io/acme/kmods:v1-6.1.0_rt_7" + fp},
		{name: "no tag is latest", ref: "quay.io/acme/kmods", kernel: "6.1.0",
			want: "quay.io/acme/kmods:latest-6.1.0" + fp},
		{name: "a digest is dropped", ref: "quay.io/acme/kmods:v1@sha256:" + strings.Repeat("a", 64), kernel: "6.1.0",
			want: "quay.io/acme/kmods:v1-6.1.0" + fp},
		{name: "a port stays in the registry", ref: "127.0.0.1:5000/kmods:v1", kernel: "6.1.0",
			want: "127.0.0.1:5000/kmods:v1-6.1.0" + fp},
		{name: "empty kernel", ref: "quay.io/acme/kmods:v1", kernel: "", wantErr: "the kernel version is empty"},
		{name: "inputs that bind nothing", ref: "quay.io/acme/kmods:v1", kernel: "6.1.0", inputs: &trust.Inputs{}, wantErr: "inputs: no build type"},
		{name: "bad reference", ref: "quay.io/acme/KMODS:v1", kernel: "6.1.0", wantErr: `naming the upgrade-ahead tag of "quay.io/acme/KMODS:v1"`},
		{name: "long tag cut to 128 with a hash", ref: "quay.io/acme/kmods:v1", kernel: long, cut: true,
			want: "quay.io/acme/kmods:v1-" + long[:128-len("v1-")-17] + "-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inputs := in
			if tc.inputs != nil {
				inputs = *tc.inputs
			}
			got, err := kmod.AheadRef(tc.ref, tc.kernel, inputs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("AheadRef(%q, %q) = %q, %v; want an error with %q", tc.ref, tc.kernel, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.cut {
				tag := got[strings.LastIndex(got, ":")+1:]
				if len(tag) != 128 || !strings.HasPrefix(got, tc.want) {
					t.Fatalf("AheadRef = %q (tag of %d), want %q… with a 128-character tag", got, len(tag), tc.want)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("AheadRef(%q, %q) (-want +got):\n%s", tc.ref, tc.kernel, diff)
			}
		})
	}
	a, _ := kmod.AheadRef("quay.io/acme/kmods:v1", long+"a", in)
	b, _ := kmod.AheadRef("quay.io/acme/kmods:v1", long+"b", in)
	if a == b {
		t.Errorf("two long kernels differing at the end share the tag %s", a)
	}
	// Two targets on one kernel whose inputs differ (another driver
	// toolkit) wait at two tags.
	other := in
	other.Dependencies = []trust.Dependency{{Name: "dtk", Digest: "sha256:" + strings.Repeat("d", 64)}}
	c, _ := kmod.AheadRef("quay.io/acme/kmods:v1", "6.1.0", in)
	d, _ := kmod.AheadRef("quay.io/acme/kmods:v1", "6.1.0", other)
	if c == d {
		t.Errorf("two input sets on one kernel share the tag %s", c)
	}
}

// TestKmodAheadBuildLeavesContainerImageAndTheUpgradeAdoptsIt: an
// upgrade-ahead kmod-build (real buildah, real registry) for the target
// release's kernel pushes to containerImage's ahead tag and leaves
// containerImage on the running pool's image; the run for that kernel after
// the upgrade proves the ahead image and moves containerImage's tag to it
// with a buildah that does not exist, so it cannot have built; an image an
// attacker put at an ahead tag instead is not adopted but built over.
func TestKmodAheadBuildLeavesContainerImageAndTheUpgradeAdoptsIt(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	osTag := e.Registry.Ref("payload/rhel-coreos:running")
	env.PushOSImage(t, osTag, kmodtest.Kernel)
	f := newFixture(t, e, osTag, "", markerDockerfile)
	f.md.Spec.OSMapping.Sign = nil
	target := f.md.Spec.OSMapping.ContainerImage
	mustBuild(t, f)
	running := digestAt(t, target)

	nextKernel := kmodtest.Kernel + ".1"
	f.osImage = env.PushOSImage(t, e.Registry.Ref("payload/rhel-coreos:next"), nextKernel)
	f.targetRelease = "4.21.0"
	log := mustBuild(t, f)
	aheadTag := aheadTagOf(t, f, target, work.KmodBuildFile)
	if got := digestAt(t, target); got != running {
		t.Fatalf("the ahead build moved %s from %s to %s; log:\n%s", target, running, got, log)
	}
	ahead := digestAt(t, aheadTag)
	if !strings.Contains(log, "building "+aheadTag) || f.result(t, "KMOD_IMAGE_DIGEST") != ahead || f.result(t, "REUSED") != "false" {
		t.Fatalf("the ahead build's result %s, want the image it built at %s (%s); log:\n%s", f.result(t, "KMOD_IMAGE_DIGEST"), aheadTag, ahead, log)
	}

	t.Run("the upgrade's run adopts the ahead image without building", func(t *testing.T) {
		f.targetRelease = ""
		f.buildahBin = filepath.Join(t.TempDir(), "no-buildah")
		log := mustBuild(t, f)
		if got := digestAt(t, target); got != ahead {
			t.Fatalf("%s is %s after the upgrade's run, want the ahead image %s; log:\n%s", target, got, ahead, log)
		}
		rep := readReport(t, f, work.KmodBuildFile)
		if f.result(t, "REUSED") != "true" || !rep.Reused || rep.Digest != ahead || !strings.Contains(log, target+" now names it") {
			t.Errorf("build.json reused %v digest %s, want the ahead %s reused; log:\n%s", rep.Reused, rep.Digest, ahead, log)
		}
		// The attested target is containerImage, so the adopted image
		// keeps proving there.
		log = mustBuild(t, f)
		if !strings.Contains(log, target+" is "+ahead+", attested by") {
			t.Errorf("the next run did not reuse %s at %s; log:\n%s", ahead, target, log)
		}
	})

	t.Run("an image planted at the ahead tag is built over", func(t *testing.T) {
		f.buildahBin = ""
		kernel := kmodtest.Kernel + ".2"
		f.osImage = env.PushOSImage(t, e.Registry.Ref("payload/rhel-coreos:later"), kernel)
		f.targetRelease = "4.22.0"
		mustBuild(t, f)
		at := aheadTagOf(t, f, target, work.KmodBuildFile)
		// After the ahead run, and before the upgrade, the tag is
		// overwritten.
		planted := push(t, at, withFile(t, pull(t, target), "opt/kiln/backdoor", "payload\n"))
		f.targetRelease = ""
		var out bytes.Buffer
		if err := f.build(t, &out); err != nil {
			t.Fatalf("kmod-build: %v\n%s", err, out.String())
		}
		log := out.String()
		want := at + " holds " + planted + " " + notProven
		if got := f.result(t, "REUSE_REJECTED"); !strings.Contains(got, want) || !strings.Contains(log, want) {
			t.Errorf("REUSE_REJECTED %q, want it and the log to carry %q; log:\n%s", got, want, log)
		}
		if got := digestAt(t, target); got == planted || !strings.Contains(log, "building "+target) {
			t.Fatalf("%s is %s (planted %s), want a fresh build; log:\n%s", target, got, planted, log)
		}
		files, _ := kmodtest.FlattenImage(t, pull(t, f.image(t)))
		if _, ok := files["opt/kiln/backdoor"]; ok || string(files["opt/kiln/built"]) != "built for "+kernel+"\n" {
			t.Errorf("%s carries the planted file or was not built for %s: /opt/kiln/built = %q", f.image(t), kernel, files["opt/kiln/built"])
		}
	})
}

// TestKmodAheadSignLeavesContainerImageAndTheUpgradeAdoptsIt is the same
// story for kmod-sign: the ahead run signs into containerImage's ahead tag;
// the upgrade's run proves it (attestation and every module's signer) and
// moves containerImage's tag to it without signing; an unsigned image at
// the ahead tag is signed again, not adopted.
func TestKmodAheadSignLeavesContainerImageAndTheUpgradeAdoptsIt(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true})
	unsignedRef := e.Registry.Ref("kmods/given:unsigned")
	unsigned := kmodtest.UnsignedImage(t, true)
	push(t, unsignedRef, unsigned)
	f := newFixture(t, e, "", "", "")
	f.md.Spec.OSMapping.Build = nil
	f.md.Spec.OSMapping.Sign.UnsignedImage = unsignedRef
	target := f.md.Spec.OSMapping.ContainerImage
	old, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	running := push(t, target, old) // the running pool's image
	f.targetRelease = "4.21.0"
	mustSign(t, f)
	aheadTag := aheadTagOf(t, f, target, work.KmodSignFile)

	t.Run("an unsigned image at the ahead tag is signed again", func(t *testing.T) {
		planted := push(t, aheadTag, unsigned)
		log := mustSign(t, f)
		wantRejected(t, f, log, aheadTag+" holds "+planted+" "+notProven)
		if got := digestAt(t, target); got != running {
			t.Fatalf("the ahead sign moved %s from %s to %s; log:\n%s", target, running, got, log)
		}
		if got := digestAt(t, aheadTag); got == planted || got != f.result(t, "KMOD_IMAGE_DIGEST") {
			t.Fatalf("%s holds %s, want the image this run signed (%s), not the planted %s", aheadTag, got, f.result(t, "KMOD_IMAGE_DIGEST"), planted)
		}
		wantSigners(t, f, "kiln day-0 signer")
	})

	t.Run("the upgrade's run adopts the ahead image without signing", func(t *testing.T) {
		f.targetRelease = ""
		ahead := digestAt(t, aheadTag)
		log := mustSign(t, f)
		if got := digestAt(t, target); got != ahead {
			t.Fatalf("%s is %s after the upgrade's run, want the ahead image %s; log:\n%s", target, got, ahead, log)
		}
		rep := signReport(t, f)
		if f.result(t, "REUSED") != "true" || !rep.Reused || len(rep.Signed) != 2 || strings.Contains(log, "signing ") || !strings.Contains(log, target+" now names it") {
			t.Errorf("sign.json reused %v signed %v, want the ahead image's 2 modules reused without signing; log:\n%s", rep.Reused, rep.Signed, log)
		}
	})

	// Two offered releases on one kernel whose inputs differ (here the
	// module signing certificate; another driver toolkit is the same for
	// kmod-build) wait at two tags: the later ahead run leaves the earlier
	// one's image, and the upgrade adopts the one for its own inputs.
	t.Run("two targets on one kernel with other inputs keep both images", func(t *testing.T) {
		first := digestAt(t, aheadTag)
		firstCert, firstKey := f.certFile, f.keyFile
		kp := kmodtest.NewKeyPair(t, "kiln day-0 signer, next")
		f.certFile, f.keyFile = kp.CertPEM, kp.KeyPEM
		f.targetRelease = "4.21.1"
		mustSign(t, f)
		other := aheadTagOf(t, f, target, work.KmodSignFile)
		if other == aheadTag {
			t.Fatalf("both targets' inputs name the tag %s", other)
		}
		if got := digestAt(t, aheadTag); got != first {
			t.Fatalf("the second target's run moved %s from %s to %s", aheadTag, first, got)
		}
		wantSigners(t, f, "kiln day-0 signer, next")

		// The running pool's image again, so that the upgrade's run has
		// to find its image at the ahead tag.
		push(t, target, old)
		f.certFile, f.keyFile, f.targetRelease = firstCert, firstKey, ""
		log := mustSign(t, f)
		if got := digestAt(t, target); got != first || f.result(t, "REUSED") != "true" || !strings.Contains(log, target+" now names it") {
			t.Errorf("%s is %s (REUSED %s) after the upgrade's run, want the first target's image %s; log:\n%s", target, got, f.result(t, "REUSED"), first, log)
		}
	})
}

// aheadTagOf is target's ahead tag for the kernel and inputs that the
// stage's report (file) in f's workspace records.
func aheadTagOf(t *testing.T, f *fixture, target, file string) string {
	t.Helper()
	rep := readReport(t, f, file)
	if rep.Inputs == nil {
		t.Fatalf("%s records no inputs", file)
	}
	at, err := kmod.AheadRef(target, rep.Kernel, *rep.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// digestAt is what ref's tag names now.
func digestAt(t *testing.T, ref string) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	d, err := remote.Head(r)
	if err != nil {
		t.Fatalf("reading %s: %v", ref, err)
	}
	return d.Digest.String()
}
