package kmod_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/modsign"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

// notProven is the start of the rejection every reuse check logs, after
// "<ref> holds sha256:…".
const notProven = "with no kiln attestation for these inputs"

// TestKmodSignReusesOnlyWhatKilnProves plays an attacker with push access
// to the kmod repository against kmod-sign: whatever sits at
// containerImage is reused only with kiln's attestation for the current
// inputs AND every module signed by the current certificate; anything
// else is signed again from the unsigned image, and the run says why. One
// registry and one unsigned image (two compiled modules) serve every case.
func TestKmodSignReusesOnlyWhatKilnProves(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true})
	unsignedRef := e.Registry.Ref("kmods/given:unsigned")
	unsigned := kmodtest.UnsignedImage(t, true)
	push(t, unsignedRef, unsigned)
	newSignFixture := func(t *testing.T, tag string) *fixture {
		f := newFixture(t, e, "", "", "")
		f.md.Spec.OSMapping.Build = nil
		f.md.Spec.OSMapping.Sign.UnsignedImage = unsignedRef
		f.md.Spec.OSMapping.ContainerImage = e.Registry.Ref("kmods/rhcos:" + tag)
		return f
	}

	t.Run("unsigned image pushed at the signed tag is signed again", func(t *testing.T) {
		f := newSignFixture(t, "planted-unsigned")
		planted := push(t, f.md.Spec.OSMapping.ContainerImage, unsigned)
		log := mustSign(t, f)
		wantRejected(t, f, log, f.md.Spec.OSMapping.ContainerImage+" holds "+planted+" "+notProven)
		if f.result(t, "KMOD_IMAGE_DIGEST") == planted {
			t.Fatalf("kmod-sign kept the planted unsigned image %s", planted)
		}
		wantSigners(t, f, "kiln day-0 signer")
		rep := signReport(t, f)
		if len(rep.Signed) != 2 || rep.Reused {
			t.Errorf("sign.json signed %v reused %v, want 2 modules signed in this run", rep.Signed, rep.Reused)
		}

		// The image kiln signed is reused: attested, and both modules
		// checked against the current certificate, which the report lists.
		signed := f.image(t)
		log = mustSign(t, f)
		if f.image(t) != signed || !strings.Contains(log, "nothing to sign") {
			t.Fatalf("second kmod-sign: %s, want %s reused; log:\n%s", f.image(t), signed, log)
		}
		if rep := signReport(t, f); !rep.Reused || len(rep.Signed) != 2 || rep.ReuseRejected != "" || f.result(t, "REUSE_REJECTED") != "" {
			t.Errorf("reused sign.json %+v, REUSE_REJECTED %q", rep, f.result(t, "REUSE_REJECTED"))
		}
	})

	t.Run("signature and attestation copied from another digest are rejected", func(t *testing.T) {
		f := newSignFixture(t, "copied-signature")
		mustSign(t, f)
		genuine := f.image(t)
		// The attacker plants the unsigned image and copies kiln's .sig and
		// .att manifests, made with the right key over the genuine digest.
		planted := push(t, f.md.Spec.OSMapping.ContainerImage, unsigned)
		copySignatureTags(t, genuine, planted)
		log := mustSign(t, f)
		wantRejected(t, f, log, f.md.Spec.OSMapping.ContainerImage+" holds "+planted+" "+notProven)
		if f.result(t, "KMOD_IMAGE_DIGEST") == planted {
			t.Fatalf("kmod-sign accepted %s with a signature copied from %s", planted, genuine)
		}
		wantSigners(t, f, "kiln day-0 signer")
	})

	t.Run("modules signed by a rotated-out certificate are signed again", func(t *testing.T) {
		f := newSignFixture(t, "rotated")
		f.certFile, f.keyFile = env.ModuleSigningPair(t, "kiln old signer")
		mustSign(t, f)
		wantSigners(t, f, "kiln old signer")
		old := f.result(t, "KMOD_IMAGE_DIGEST")

		// Rotation: the Secrets now hold a new certificate. The old image's
		// attestation names the old certificate, so it proves nothing.
		kp := kmodtest.NewKeyPair(t, "kiln new signer")
		f.certFile, f.keyFile = kp.CertPEM, kp.KeyPEM
		log := mustSign(t, f)
		wantRejected(t, f, log, f.md.Spec.OSMapping.ContainerImage+" holds "+old+" "+notProven+": parameter certificateHash")
		wantSigners(t, f, "kiln new signer")
		rotated := signReport(t, f)

		// Even an attestation for the current inputs does not make old
		// signatures current: plant the old image with kiln's attestation
		// for the new certificate (a bug, or a stolen cosign key without
		// the module key) and kmod-sign checks each module's signer.
		oldRef := f.md.Spec.OSMapping.ContainerImage[:strings.LastIndex(f.md.Spec.OSMapping.ContainerImage, ":")] + "@" + old
		push(t, f.md.Spec.OSMapping.ContainerImage, pull(t, oldRef))
		attest(t, f, oldRef, rotated)
		log = mustSign(t, f)
		wantRejected(t, f, log, f.md.Spec.OSMapping.ContainerImage+" holds "+old+", attested by kiln, but its module /usr/lib/modules/"+kmodtest.Kernel+
			"/extra/kmm_ci_a.ko: signed by another certificate (issuer \"CN=kiln old signer\"")
		if f.result(t, "KMOD_IMAGE_DIGEST") == old {
			t.Fatal("kmod-sign reused modules signed by the old certificate")
		}
		wantSigners(t, f, "kiln new signer")
	})

	t.Run("a tag moved between build and sign does not change what is signed", func(t *testing.T) {
		f := newSignFixture(t, "moved-unsigned")
		movedTag := e.Registry.Ref("kmods/moved:unsigned")
		built := push(t, movedTag, unsigned)
		builtRef := e.Registry.Ref("kmods/moved") + "@" + built
		// kmod-build's report names its output by digest; then the tag moves.
		writeFile(t, filepath.Join(work.Workspace{Root: f.work}.StageDir(work.StageKmodBuild), work.KmodBuildFile),
			`{"image":"`+builtRef+`","digest":"`+built+`"}`)
		push(t, movedTag, withFile(t, unsigned, "opt/lib/modules/"+kmodtest.Kernel+"/planted.ko", "\x7fELF planted"))
		f.md.Spec.OSMapping.Sign.UnsignedImage = movedTag
		mustSign(t, f)
		if got := signReport(t, f).Inputs.Parameters["unsignedImage"]; got != builtRef {
			t.Errorf("kmod-sign signed %s, want kmod-build's %s", got, builtRef)
		}
		files, _ := kmodtest.FlattenImage(t, pull(t, f.image(t)))
		for _, p := range []string{"opt/lib/modules/" + kmodtest.Kernel + "/planted.ko", "usr/lib/modules/" + kmodtest.Kernel + "/extra/planted.ko"} {
			if _, ok := files[p]; ok {
				t.Errorf("the image behind the moved tag was signed: it has %s", p)
			}
		}
		wantSigners(t, f, "kiln day-0 signer")
	})

	t.Run("without a public key nothing is reused", func(t *testing.T) {
		f := newSignFixture(t, "no-identity")
		mustSign(t, f)
		os.Remove(filepath.Join(f.cosign, "cosign.pub"))
		log := mustSign(t, f)
		wantRejected(t, f, log, notProven+": no signing identity configured")
		wantSigners(t, f, "kiln day-0 signer")
	})
}

func mustSign(t *testing.T, f *fixture) string {
	t.Helper()
	var log bytes.Buffer
	if err := f.sign(t, &log); err != nil {
		t.Fatalf("kmod-sign: %v\n%s", err, log.String())
	}
	return log.String()
}

// wantRejected: the log and REUSE_REJECTED say why the target was not
// reused, and the report agrees.
func wantRejected(t *testing.T, f *fixture, log, want string) {
	t.Helper()
	wantRejectedIn(t, f, "sign.json", log, want)
}

func wantRejectedIn(t *testing.T, f *fixture, report, log, want string) {
	t.Helper()
	got := f.result(t, "REUSE_REJECTED")
	t.Logf("REUSE_REJECTED: %s", got)
	if !strings.Contains(got, want) || !strings.Contains(log, got+"; not reused") {
		t.Errorf("REUSE_REJECTED %q, want it to carry %q and the log to say it; log:\n%s", got, want, log)
	}
	if rep := readReport(t, f, report); rep.Reused || rep.ReuseRejected != got {
		t.Errorf("%s reused %v rejected %q, want not reused, rejected %q", report, rep.Reused, rep.ReuseRejected, got)
	}
}

// wantSigners checks with modinfo that every module in the image the
// results name is signed by cn, and with SignedBy that the signature
// verifies with the certificate in the Secret now.
func wantSigners(t *testing.T, f *fixture, cn string) {
	t.Helper()
	files, _ := kmodtest.FlattenImage(t, pull(t, f.image(t)))
	certPEM, err := os.ReadFile(f.certFile)
	if err != nil {
		t.Fatal(err)
	}
	cert, _, err := modsign.LoadKeyPair(certPEM, mustRead(t, f.keyFile))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for p, b := range files {
		if !strings.HasSuffix(p, ".ko") {
			continue
		}
		n++
		ko := filepath.Join(t.TempDir(), filepath.Base(p))
		writeFile(t, ko, string(b))
		if got := kmodtest.ModinfoSig(t, ko)["signer"]; got != cn {
			t.Errorf("modinfo -F signer %s in %s = %q, want %q", p, f.image(t), got, cn)
		}
		if err := modsign.SignedBy(b, cert); err != nil {
			t.Errorf("%s in %s: %v", p, f.image(t), err)
		}
	}
	if n != 2 {
		t.Errorf("%s holds %d modules, want 2", f.image(t), n)
	}
}

func signReport(t *testing.T, f *fixture) work.KmodReport {
	t.Helper()
	return readReport(t, f, "sign.json")
}

func readReport(t *testing.T, f *fixture, file string) work.KmodReport {
	t.Helper()
	var rep work.KmodReport
	b := mustRead(t, filepath.Join(work.Workspace{Root: f.work}.StageDir(work.StageKmodSign), file))
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// push writes img at ref and returns its digest.
func push(t *testing.T, ref string, img v1.Image) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// copySignatureTags copies cosign's .sig and .att manifests of from
// (repository@digest) to the tags cosign looks up for digest to.
func copySignatureTags(t *testing.T, from, to string) {
	t.Helper()
	src, err := name.NewDigest(from, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{".sig", ".att"} {
		tag := func(d string) string { return src.Context().Name() + ":" + strings.Replace(d, ":", "-", 1) + suffix }
		push(t, tag(to), pull(t, tag(src.DigestStr())))
	}
}

// attest signs and attests image with the fixture's cosign key and the
// inputs another run's report recorded.
func attest(t *testing.T, f *fixture, image string, rep work.KmodReport) {
	t.Helper()
	in, err := f.attest().Input(image, *rep.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Sign(t.Context(), registry.Remote{Insecure: []string{f.reg.Host}}, in); err != nil {
		t.Fatal(err)
	}
}
