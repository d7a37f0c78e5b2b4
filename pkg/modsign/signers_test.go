package modsign_test

import (
	"crypto"
	"errors"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/modsign"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

// TestSignedByAcceptsOnlyTheCurrentCertificate: a module passes only with a
// signature that names the current certificate AND verifies with its key
// over the module's content.
func TestSignedByAcceptsOnlyTheCurrentCertificate(t *testing.T) {
	current := kmodtest.NewKeyPair(t, "kiln current signer")
	// Same subject and serial (newKeyPair's), another key: a look-alike
	// certificate must not pass on its name alone.
	lookalike := kmodtest.NewKeyPair(t, "kiln current signer")
	other := kmodtest.NewKeyPair(t, "kiln other signer")
	module := []byte("\x7fELF kiln test module content")
	sign := func(kp kmodtest.KeyPair, m []byte) []byte {
		s, err := modsign.NewSigner(kp.Cert, kp.Key, crypto.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.Sign(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	tampered := sign(current, module)
	tampered[5] ^= 0xff
	cases := []struct {
		name   string
		module []byte
		want   string // "" accepts
	}{
		{"signed by the current certificate", sign(current, module), ""},
		{"unsigned", module, modsign.ErrNotSigned.Error()},
		{"signed by another certificate", sign(other, module), `signed by another certificate (issuer "CN=kiln other signer,O=kiln"`},
		{"same issuer and serial, another key", sign(lookalike, module), "does not verify with that certificate"},
		{"content changed after signing", tampered, "does not verify with that certificate"},
		{"re-signed over an old signature", sign(current, sign(other, module)), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := modsign.SignedBy(c.module, current.Cert)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want it to say %q", err, c.want)
			case c.name == "unsigned" && !errors.Is(err, modsign.ErrNotSigned):
				t.Fatalf("error %v does not wrap ErrNotSigned", err)
			}
		})
	}
}

// FuzzSignedBy: whatever a registry serves as a module, the check returns
// an answer and never panics, and only a real signature passes.
func FuzzSignedBy(f *testing.F) {
	kp := kmodtest.NewKeyPair(f, "kiln fuzz signer")
	s, err := modsign.NewSigner(kp.Cert, kp.Key, crypto.SHA256)
	if err != nil {
		f.Fatal(err)
	}
	good, err := s.Sign([]byte("\x7fELF fuzz"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte("\x7fELF" + modsign.ModuleSigMagic))
	f.Fuzz(func(t *testing.T, module []byte) {
		if modsign.SignedBy(module, kp.Cert) == nil && !strings.HasSuffix(string(module), modsign.ModuleSigMagic) {
			t.Fatal("accepted a module without a signature")
		}
	})
}
