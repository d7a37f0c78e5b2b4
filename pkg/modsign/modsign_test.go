package modsign_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/modsign"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

// TestSignMatchesSignFile signs a real compiled module with kiln's Go signer
// and with the kernel's scripts/sign-file, and checks that modinfo reads
// the same signer, key and hash from both, and that openssl accepts ours as
// a detached CMS signature over the module content.
func TestSignMatchesSignFile(t *testing.T) {
	ko := env.BuildKernelModule(t, "kiln_hello", env.HelloModuleSource)
	unsigned, err := os.ReadFile(ko)
	if err != nil {
		t.Fatal(err)
	}
	kp := kmodtest.NewKeyPair(t, "kiln test signer")
	dir := t.TempDir()

	// Reference: sign-file.
	signFile, err := env.SignFile()
	if err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(dir, "ref.ko")
	if err := os.WriteFile(ref, unsigned, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(signFile, "sha256", kp.KeyPEM, kp.CertPEM, ref).CombinedOutput(); err != nil {
		t.Fatalf("sign-file: %v\n%s", err, out)
	}

	// Ours.
	cert, key, err := modsign.LoadKeyPair(kp.CertData, kp.KeyRaw)
	if err != nil {
		t.Fatal(err)
	}
	s, err := modsign.NewSigner(cert, key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := s.Sign(unsigned)
	if err != nil {
		t.Fatal(err)
	}
	ours := filepath.Join(dir, "ours.ko")
	if err := os.WriteFile(ours, signed, 0o644); err != nil {
		t.Fatal(err)
	}

	want, got := kmodtest.ModinfoSig(t, ref), kmodtest.ModinfoSig(t, ours)
	if want["signer"] != "kiln test signer" || want["sig_hashalgo"] != "sha256" || want["sig_id"] != "PKCS#7" {
		t.Fatalf("sign-file reference reads unexpectedly: %v", want)
	}
	for f, w := range want {
		if got[f] != w {
			t.Errorf("modinfo %s: ours %q, sign-file %q", f, got[f], w)
		}
	}
	t.Logf("modinfo of a module signed by kiln's Go signer:\n%s", kmodtest.ModinfoText(t, ours))

	// openssl verifies our PKCS#7 over the unsigned content.
	content, sig, err := modsign.ParseSignature(signed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(content, unsigned) {
		t.Fatal("content before the signature differs from the unsigned module")
	}
	sigPath, contentPath := filepath.Join(dir, "sig.p7s"), filepath.Join(dir, "content")
	_ = os.WriteFile(sigPath, sig.PKCS7, 0o644)
	_ = os.WriteFile(contentPath, content, 0o644)
	out, err := exec.Command("openssl", "cms", "-verify", "-binary", "-inform", "DER", "-in", sigPath,
		"-content", contentPath, "-CAfile", kp.CertPEM, "-purpose", "any", "-out", os.DevNull).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Verification successful") {
		t.Fatalf("openssl cms -verify: %v\n%s", err, out)
	}
	// And rejects it over other content.
	_ = os.WriteFile(contentPath, append(content, 0), 0o644)
	if out, err := exec.Command("openssl", "cms", "-verify", "-binary", "-inform", "DER", "-in", sigPath,
		"-content", contentPath, "-CAfile", kp.CertPEM, "-purpose", "any", "-out", os.DevNull).CombinedOutput(); err == nil {
		t.Fatalf("openssl accepted the signature over modified content:\n%s", out)
	}
}

// TestResignReplaces: an already-signed module (by sign-file, another key)
// is re-signed, never signed twice.
func TestResignReplaces(t *testing.T) {
	ko := env.BuildKernelModule(t, "kiln_twice", env.HelloModuleSource)
	unsigned, _ := os.ReadFile(ko)
	old, ours := kmodtest.NewKeyPair(t, "old vendor key"), kmodtest.NewKeyPair(t, "kiln re-signer")
	signFile, err := env.SignFile()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(signFile, "sha512", old.KeyPEM, old.CertPEM, ko).CombinedOutput(); err != nil {
		t.Fatalf("sign-file: %v\n%s", err, out)
	}
	signedByOld, _ := os.ReadFile(ko)
	s, err := modsign.NewSigner(ours.Cert, ours.Key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	once, err := s.Sign(signedByOld)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := s.Sign(once)
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string][]byte{"re-signed": once, "signed again": twice} {
		content, _, err := modsign.ParseSignature(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(content, unsigned) {
			t.Errorf("%s: content is not the unsigned module (%d vs %d bytes): a signature was stacked", name, len(content), len(unsigned))
		}
		if n := bytes.Count(m, []byte(modsign.ModuleSigMagic)); n != 1 {
			t.Errorf("%s: %d signature magics, want 1", name, n)
		}
	}
	p := filepath.Join(t.TempDir(), "m.ko")
	_ = os.WriteFile(p, twice, 0o644)
	if got := kmodtest.ModinfoSig(t, p); got["signer"] != "kiln re-signer" || got["sig_hashalgo"] != "sha256" {
		t.Errorf("modinfo after re-signing: %v", got)
	}
}

func TestSignerRejects(t *testing.T) {
	kp := kmodtest.NewKeyPair(t, "a")
	other := kmodtest.NewKeyPair(t, "b")
	if _, err := modsign.NewSigner(kp.Cert, other.Key, crypto.SHA256); err == nil || !strings.Contains(err.Error(), `the key does not match the certificate of "a"`) {
		t.Errorf("mismatched key: got %v", err)
	}
	if _, err := modsign.NewSigner(kp.Cert, kp.Key, crypto.SHA1); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("sha1: got %v", err)
	}
	s, _ := modsign.NewSigner(kp.Cert, kp.Key, crypto.SHA256)
	if _, err := s.Sign([]byte("#!/bin/sh\n")); err == nil || !strings.Contains(err.Error(), "not an ELF file") {
		t.Errorf("non-ELF: got %v", err)
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if _, err := modsign.NewSigner(kp.Cert, ec, crypto.SHA256); err == nil {
		t.Error("EC key for an RSA certificate accepted")
	}
}

func TestLoadKeyPairErrors(t *testing.T) {
	kp := kmodtest.NewKeyPair(t, "a")
	cases := []struct {
		name       string
		cert, key  []byte
		wantErr    string
		wantSecret bool
	}{
		{"bad cert", []byte("not a cert"), kp.KeyRaw, "parsing signing certificate", false},
		{"no key PEM", kp.CertData, []byte("garbage"), "parsing signing key: no PEM block found", false},
		{"bad key", kp.CertData, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("secret-bytes")}), "parsing signing key (PRIVATE KEY block): not a PKCS#1, PKCS#8 or EC private key", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := modsign.LoadKeyPair(tc.cert, tc.key)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "secret-bytes") {
				t.Error("error leaks key material")
			}
		})
	}
	// DER certificates (as KMM secrets often hold) load too.
	b, _ := pem.Decode(kp.CertData)
	if _, _, err := modsign.LoadKeyPair(b.Bytes, kp.KeyRaw); err != nil {
		t.Errorf("DER certificate: %v", err)
	}
}

func TestParseSignatureErrors(t *testing.T) {
	magic := []byte(modsign.ModuleSigMagic)
	trailer := func(idType byte, sigLen uint32, first byte) []byte {
		return []byte{first, 0, idType, 0, 0, 0, 0, 0, byte(sigLen >> 24), byte(sigLen >> 16), byte(sigLen >> 8), byte(sigLen)}
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	cases := []struct {
		name    string
		in      []byte
		wantErr string
	}{
		{"unsigned", []byte("\x7fELF..."), "module is not signed"},
		{"short", cat([]byte("abc"), magic), "3 bytes before the magic string, need 12"},
		{"sig_len too large", cat([]byte("\x7fELF"), trailer(2, 99, 0), magic), "sig_len 99 exceeds the 4 bytes before the trailer"},
		{"not pkcs7", cat([]byte("\x7fELFsig"), trailer(1, 3, 0), magic), "id_type 1, only PKCS#7 (2) is supported"},
		{"algo set", cat([]byte("\x7fELFsig"), trailer(2, 3, 4), magic), "must be 0 for PKCS#7"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := modsign.ParseSignature(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want %q", err, tc.wantErr)
			}
			if tc.name == "unsigned" && !errors.Is(err, modsign.ErrNotSigned) {
				t.Errorf("want ErrNotSigned, got %v", err)
			}
		})
	}
	content, sig, err := modsign.ParseSignature(cat([]byte("\x7fELFsig"), trailer(2, 3, 0), magic))
	if err != nil || string(content) != "\x7fELF" || string(sig.PKCS7) != "sig" {
		t.Errorf("valid trailer: content %q sig %+v err %v", content, sig, err)
	}
}

// FuzzParseSignature: the trailer parser never panics, and whatever it
// accepts splits the input exactly.
func FuzzParseSignature(f *testing.F) {
	f.Add([]byte("\x7fELF"))
	f.Add([]byte("\x7fELFsig\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x03" + modsign.ModuleSigMagic))
	f.Add([]byte(modsign.ModuleSigMagic))
	f.Fuzz(func(t *testing.T, in []byte) {
		content, sig, err := modsign.ParseSignature(in)
		if err != nil {
			return
		}
		if got := len(content) + len(sig.PKCS7) + 12 + len(modsign.ModuleSigMagic); got != len(in) {
			t.Fatalf("split covers %d of %d bytes", got, len(in))
		}
	})
}
