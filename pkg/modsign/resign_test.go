package modsign_test

import (
	"crypto"
	"strings"
	"testing"

	"github.com/digitorus/pkcs7"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/modsign"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

// TestModuleSignatureIsDeterministicWithoutSigningTime signs one module
// twice with one RSA key: the bytes are equal, and the PKCS#7 carries no
// signed attributes (so no signing time) for a rebuild to differ in.
func TestModuleSignatureIsDeterministicWithoutSigningTime(t *testing.T) {
	kp := kmodtest.NewKeyPair(t, "kiln deterministic signer")
	s, err := modsign.NewSigner(kp.Cert, kp.Key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	module := append([]byte("\x7fELF"), strings.Repeat("module body ", 512)...)
	a, err := s.Sign(module)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Sign(module)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Fatal("signing the same module twice with the same key gave different bytes")
	}
	_, sig, err := modsign.ParseSignature(a)
	if err != nil {
		t.Fatal(err)
	}
	p7, err := pkcs7.Parse(sig.PKCS7)
	if err != nil {
		t.Fatal(err)
	}
	if len(p7.Signers) != 1 {
		t.Fatalf("%d signers, want 1", len(p7.Signers))
	}
	if n := len(p7.Signers[0].AuthenticatedAttributes); n != 0 {
		t.Errorf("the signature has %d signed attributes (signing time among them?), want none", n)
	}
}

// modA is where kmod-sign puts the module filesToSign names as
// /opt/lib/modules/<kver>/kmm_ci_a.ko.
const modA = "/usr/lib/modules/" + kmodtest.Kernel + "/extra/kmm_ci_a.ko"

// TestResign re-signs an unsigned image with the signatures of kmod-sign's
// image, without the key, and gets kmod-sign's digest; it refuses a module
// whose content changed, a signature by another certificate, and signed
// modules that are missing or unsigned, naming the file.
func TestResign(t *testing.T) {
	r := env.StartRegistry(t, env.RegistryOptions{})
	unsigned := kmodtest.UnsignedImage(t, true)
	src, _ := name.ParseReference(r.Ref("kmods/rhcos:unsigned"), name.Insecure)
	if err := remote.Write(src, unsigned); err != nil {
		t.Fatal(err)
	}
	ud, _ := unsigned.Digest()
	patterns := []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/*.ko"}
	ours, theirs := kmodtest.NewKeyPair(t, "kiln kmod signer"), kmodtest.NewKeyPair(t, "someone else")
	signWith := func(kp kmodtest.KeyPair, tag string) (v1.Image, v1.Hash) {
		s, err := modsign.NewSigner(kp.Cert, kp.Key, crypto.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		dst, _ := name.ParseReference(r.Ref("kmods/rhcos:"+tag), name.Insecure)
		res, err := modsign.SignImage(t.Context(), modsign.SignImageInput{Source: src, Target: dst, Signer: s, FilesToSign: patterns})
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(dst)
		if err != nil {
			t.Fatal(err)
		}
		return img, res.Digest
	}
	signed, want := signWith(ours, "signed")
	foreign, _ := signWith(theirs, "foreign")
	certHash, serial := modsign.CertID(ours.Cert)
	in, err := trust.KmodSign{Module: "openshift-kmm/kiln-hello", Target: r.Ref("kmods/rhcos:signed"),
		Unsigned: src.Context().Digest(ud.String()).String(), CertHash: certHash, CertSerial: serial, Hash: "sha256",
		FilesToSign: patterns, KernelVersion: kmodtest.Kernel}.Inputs()
	if err != nil {
		t.Fatal(err)
	}

	got, err := modsign.Resign(unsigned, signed, in)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != want {
		t.Errorf("re-signed digest %s, kmod-sign pushed %s", got.Digest, want)
	}
	if d := in.Diff(got.Inputs); d != "" {
		t.Errorf("re-signed inputs differ from the attested ones: %s", d)
	}

	// The signed module with one byte of its content changed, its
	// signature kept.
	mod, err := payload.ReadImageFile(signed, strings.TrimPrefix(modA, "/"))
	if err != nil {
		t.Fatal(err)
	}
	tampered := []byte(string(mod))
	tampered[100] ^= 0xff
	unsignedMod, err := payload.ReadImageFile(unsigned, "opt/lib/modules/"+kmodtest.Kernel+"/kmm_ci_a.ko")
	if err != nil {
		t.Fatal(err)
	}
	noModules, err := mutate.AppendLayers(empty.Image, env.TarLayer(t, map[string][]byte{"usr/lib/modules/" + kmodtest.Kernel + "/": nil}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		signed v1.Image
		want   string
	}{
		{"changed content", withLayer(t, signed, map[string][]byte{strings.TrimPrefix(modA, "/"): tampered}), "module " + modA + ": the signed image's module content"},
		{"other certificate", foreign, "module " + modA + ": signed by certificate "},
		{"unsigned module", withLayer(t, signed, map[string][]byte{strings.TrimPrefix(modA, "/"): unsignedMod}), "module " + modA + ": not signed in the signed image"},
		{"module left under /opt", unsigned, "module " + modA + ": not in the signed image"},
		{"missing module", noModules, "module " + modA + ": not in the signed image"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := modsign.Resign(unsigned, c.signed, in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func withLayer(t *testing.T, img v1.Image, files map[string][]byte) v1.Image {
	t.Helper()
	out, err := mutate.AppendLayers(img, env.TarLayer(t, files))
	if err != nil {
		t.Fatal(err)
	}
	return out
}
