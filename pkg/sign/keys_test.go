package sign

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

// TestGenerateKeyPairIsReadAsAMountedKey: a generated folder signs through
// AttestOptions (--key, --key-password-file) and verifies with its
// cosign.pub, and only the public key is readable by others.
func TestGenerateKeyPairIsReadAsAMountedKey(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	dir := t.TempDir()
	if err := GenerateKeyPair(dir); err != nil {
		t.Fatal(err)
	}
	// The umask can only take bits away, so "private" is exact and the
	// public key's other-read bit is not asserted.
	private := map[string]bool{}
	for _, f := range []string{KeyFileName, PasswordFileName, PublicKeyFileName} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		private[f] = fi.Mode().Perm()&0o077 == 0
	}
	want := map[string]bool{KeyFileName: true, PasswordFileName: true, PublicKeyFileName: false}
	if diff := cmp.Diff(want, private); diff != "" {
		t.Errorf("owner-only files (-want +got):\n%s", diff)
	}

	image := pushImage(t, reg.Host, "kiln/os:generated")
	o := AttestOptions{SigningOptions: SigningOptions{KeyPath: filepath.Join(dir, KeyFileName)}, PasswordFile: filepath.Join(dir, PasswordFileName)}
	in, err := o.Input(image, testInputs(t, reg.Host))
	if err != nil {
		t.Fatal(err)
	}
	r := registry.Remote{Insecure: []string{reg.Host}}
	if _, err := Sign(context.Background(), r, in); err != nil {
		t.Fatalf("signing with the generated key and its password file: %v", err)
	}
	v, err := LoadVerifier(filepath.Join(dir, PublicKeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := CosignVerify(context.Background(), r, image, v); err != nil {
		t.Errorf("the generated cosign.pub does not verify what its key signed: %v", err)
	}
}

// TestGenerateKeyPairMakesADifferentKeyEachTime: two folders never share
// a key or a password (both come from crypto/rand).
func TestGenerateKeyPairMakesADifferentKeyEachTime(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := GenerateKeyPair(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{KeyFileName, PasswordFileName, PublicKeyFileName} {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		if len(x) == 0 || string(x) == string(y) {
			t.Errorf("%s: empty or the same in two generated folders", f)
		}
	}
}
