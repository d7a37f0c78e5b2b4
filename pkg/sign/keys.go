package sign

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"

	"github.com/sigstore/cosign/v2/pkg/cosign"
)

// The files of a kiln cosign key folder, named as the signing-key
// Secret is mounted: --key names the private key, --key-password-file
// its password, --public-key the public half.
const (
	KeyFileName       = "cosign.key"
	PasswordFileName  = "cosign.password"
	PublicKeyFileName = "cosign.pub"
)

// GenerateKeyPair writes a new cosign key pair into dir (which must
// exist): the encrypted private key, its random password and the public
// key, under the names above, so AttestOptions and LoadVerifier read them
// as they read a mounted Secret. It overwrites what is there; callers
// that keep a key check for it first.
func GenerateKeyPair(dir string) error {
	pw := make([]byte, 16)
	if _, err := rand.Read(pw); err != nil {
		return err
	}
	pass := []byte(hex.EncodeToString(pw))
	kp, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return pass, nil })
	if err != nil {
		return err
	}
	// The password first: a key without it would be unusable.
	return errors.Join(
		os.WriteFile(filepath.Join(dir, PasswordFileName), pass, 0o600),
		os.WriteFile(filepath.Join(dir, PublicKeyFileName), kp.PublicBytes, 0o644),
		os.WriteFile(filepath.Join(dir, KeyFileName), kp.PrivateBytes, 0o600),
	)
}
