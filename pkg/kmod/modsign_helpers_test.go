package kmod_test

import (
	"archive/tar"
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kiln-dev/kiln/pkg/kmodbuild"
	"github.com/kiln-dev/kiln/test/env"
)

// The kmod-build and kmod-sign tests sign real modules with a key pair of
// their own and start from the same unsigned module image as pkg/modsign's
// tests; these helpers are the same as there (a test package's helpers
// cannot be imported).

type keyPair struct {
	cert             *x509.Certificate
	key              crypto.Signer
	certPEM, keyPEM  string // file paths, for sign-file and openssl
	certData, keyRaw []byte
}

func newKeyPair(t *testing.T, cn string) keyPair { return newKeyPairCN(t, cn) }

func newKeyPairCN(t testing.TB, cn string) keyPair {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(0x6c28dd5df3c5),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"kiln"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	dir := t.TempDir()
	kp := keyPair{cert: cert, key: key, certPEM: filepath.Join(dir, "cert.pem"), keyPEM: filepath.Join(dir, "key.pem")}
	kp.certData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kp.keyRaw = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(kp.certPEM, kp.certData, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kp.keyPEM, kp.keyRaw, 0o600); err != nil {
		t.Fatal(err)
	}
	return kp
}

// modinfoSig returns modinfo's signature fields for a module file.
func modinfoSig(t *testing.T, path string) map[string]string {
	t.Helper()
	modinfo, err := env.LookTool("modinfo")
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	for _, f := range []string{"sig_id", "signer", "sig_key", "sig_hashalgo"} {
		out, err := exec.Command(modinfo, "-F", f, path).Output()
		if err != nil {
			t.Fatalf("modinfo -F %s %s: %v", f, path, err)
		}
		fields[f] = strings.TrimSpace(string(out))
	}
	return fields
}

func modinfoText(t *testing.T, path string) string {
	out, err := exec.Command("modinfo", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`(?m)^\t\t.*\n`).ReplaceAllString(string(out), "") // drop the signature hex dump
}

const testKernel = "5.14.0-427.13.1.el9_4.x86_64"

// unsignedImage is a random "OS" layer plus a layer with two real compiled
// modules under /opt/lib/modules/<kver>/, as the day-0 proposal's Dockerfile makes.
func unsignedImage(t *testing.T, withLabel bool) v1.Image {
	t.Helper()
	ko := env.BuildKernelModule(t, "kmm_ci_a", env.HelloModuleSource)
	mod, err := os.ReadFile(ko)
	if err != nil {
		t.Fatal(err)
	}
	base, err := random.Layer(4096, "application/vnd.oci.image.layer.v1.tar+gzip")
	if err != nil {
		t.Fatal(err)
	}
	dir := "opt/lib/modules/" + testKernel + "/"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range []struct {
		name string
		mode int64
		data []byte
		dir  bool
	}{
		{name: "usr/lib/modules/" + testKernel + "/", dir: true, mode: 0o755},
		{name: dir, dir: true, mode: 0o755},
		{name: dir + "kmm_ci_a.ko", mode: 0o644, data: mod},
		{name: dir + "kmm_ci_b.ko", mode: 0o600, data: mod},
		{name: dir + "modules.dep", mode: 0o644, data: []byte("kmm_ci_a.ko:\n")},
	} {
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.data)), Typeflag: tar.TypeReg, Uid: 0, Gid: 0, ModTime: time.Unix(0, 0)}
		if e.dir {
			h.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write(e.data)
	}
	_ = tw.Close()
	b := buf.Bytes()
	mods, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, base, mods)
	if err != nil {
		t.Fatal(err)
	}
	if withLabel {
		cf, _ := img.ConfigFile()
		cf = cf.DeepCopy()
		cf.Config.Labels = map[string]string{kmodbuild.OSTreeLinuxLabel: testKernel}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
	}
	return img
}
