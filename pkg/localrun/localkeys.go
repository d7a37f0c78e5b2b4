package localrun

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/kiln-dev/kiln/pkg/sign"
)

// LocalKeys are the key folders local mode binds as the pipeline's
// signing workspaces, laid out as the Secrets would be mounted.
type LocalKeys struct {
	// Cosign holds cosign.key, cosign.password and cosign.pub (the
	// signing-key workspace).
	Cosign string
	// Public holds a copy of cosign.pub alone (the public-key workspace):
	// the steps that prove reuse with it, kmod-build and image-build among
	// them, run user code and must not find the private key beside it.
	Public string
	// KmodCert and KmodKey hold "cert" and "key" (the ModuleDay0's
	// sign.certSecret and sign.keySecret).
	KmodCert, KmodKey string
}

// EnsureLocalKeys makes, on first use, a cosign key pair and a
// kernel-module signing certificate under dir (mode 0700), and reuses them
// afterwards: a user's second run signs with the same keys, so nodes'
// policies keep trusting it. cosignKey, when set, is the user's own key
// folder (--key-dir) and is used as it is.
func EnsureLocalKeys(dir, cosignKey string) (LocalKeys, error) {
	k := LocalKeys{Cosign: filepath.Join(dir, "cosign"), KmodCert: filepath.Join(dir, "kmod-cert"), KmodKey: filepath.Join(dir, "kmod-key")}
	for _, d := range []string{k.Cosign, k.KmodCert, k.KmodKey} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return k, err
		}
	}
	if cosignKey != "" {
		for _, f := range []string{"cosign.key", "cosign.pub"} {
			if _, err := os.Stat(filepath.Join(cosignKey, f)); err != nil {
				return k, fmt.Errorf("--key-dir %s: want a folder holding cosign.key, cosign.pub and cosign.password: %w", cosignKey, err)
			}
		}
		k.Cosign = cosignKey
	} else if err := ensureCosign(k.Cosign); err != nil {
		return k, fmt.Errorf("generating the cosign key pair in %s: %w", k.Cosign, err)
	}
	k.Public = filepath.Join(dir, "cosign-pub")
	if err := copyPublicKey(k.Cosign, k.Public); err != nil {
		return k, fmt.Errorf("copying cosign.pub to the public-key folder %s: %w", k.Public, err)
	}
	if err := ensureKmodCert(k.KmodCert, k.KmodKey); err != nil {
		return k, fmt.Errorf("generating the kernel-module signing certificate in %s: %w", dir, err)
	}
	return k, nil
}

// copyPublicKey writes from/cosign.pub into to, a folder of its own, on
// every run: a user's --key-dir may hold a newer key than the last run's.
func copyPublicKey(from, to string) error {
	b, err := os.ReadFile(filepath.Join(from, "cosign.pub"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(to, "cosign.pub"), b, 0o644)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func ensureCosign(dir string) error {
	if exists(filepath.Join(dir, sign.KeyFileName)) {
		return nil
	}
	return sign.GenerateKeyPair(dir)
}

// ensureKmodCert makes a self-signed RSA certificate with the code-signing
// usage the kernel's module signing keys carry.
func ensureKmodCert(certDir, keyDir string) error {
	if exists(filepath.Join(certDir, "cert")) && exists(filepath.Join(keyDir, "key")) {
		return nil
	}
	key, err := rsa.GenerateKey(rand.Reader, 3072)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "kiln local kernel module signing key", Organization: []string{"kiln"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	return errors.Join(
		os.WriteFile(filepath.Join(keyDir, "key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: mustPKCS8(key)}), 0o600),
		os.WriteFile(filepath.Join(certDir, "cert"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644),
	)
}

func mustPKCS8(k *rsa.PrivateKey) []byte {
	b, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		panic(err) // an RSA key always marshals
	}
	return b
}
