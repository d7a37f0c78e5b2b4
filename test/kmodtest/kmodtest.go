// Package kmodtest holds the fixtures the kmod stages' tests and
// pkg/modsign's tests share: a module-signing key pair, the unsigned
// module image the day-0 proposal's Dockerfile makes (two real compiled
// modules), and readers of a signed image as a node sees it (modinfo,
// the flattened filesystem, modprobe's lookup through modules.dep).
// Tests only.
package kmodtest

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

// KeyPair is a module-signing key pair of a test: the certificate and key,
// and their PEM files for sign-file and openssl.
type KeyPair struct {
	Cert             *x509.Certificate
	Key              crypto.Signer
	CertPEM, KeyPEM  string // file paths, for sign-file and openssl
	CertData, KeyRaw []byte
}

// NewKeyPair makes a self-signed code-signing certificate for cn.
func NewKeyPair(t testing.TB, cn string) KeyPair {
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
	kp := KeyPair{Cert: cert, Key: key, CertPEM: filepath.Join(dir, "cert.pem"), KeyPEM: filepath.Join(dir, "key.pem")}
	kp.CertData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kp.KeyRaw = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(kp.CertPEM, kp.CertData, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kp.KeyPEM, kp.KeyRaw, 0o600); err != nil {
		t.Fatal(err)
	}
	return kp
}

// ModinfoSig returns modinfo's signature fields for a module file.
func ModinfoSig(t *testing.T, path string) map[string]string {
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

// ModinfoText is modinfo's output without the signature's hex dump.
func ModinfoText(t *testing.T, path string) string {
	out, err := exec.Command("modinfo", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`(?m)^\t\t.*\n`).ReplaceAllString(string(out), "") // drop the signature hex dump
}

// Kernel is the kernel release the unsigned image's modules are for.
const Kernel = "5.14.0-427.13.1.el9_4.x86_64"

// UnsignedImage is a random "OS" layer plus a layer with two real compiled
// modules under /opt/lib/modules/<kver>/, as the day-0 proposal's Dockerfile makes.
func UnsignedImage(t *testing.T, withLabel bool) v1.Image {
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
	dir := "opt/lib/modules/" + Kernel + "/"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range []struct {
		name string
		mode int64
		data []byte
		dir  bool
	}{
		{name: "usr/lib/modules/" + Kernel + "/", dir: true, mode: 0o755},
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
		cf.Config.Labels = map[string]string{kmodbuild.OSTreeLinuxLabel: Kernel}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// FlattenImage returns the final filesystem's regular files and the
// concatenated raw layer tars (to look for leaked secrets).
func FlattenImage(t *testing.T, img v1.Image) (map[string][]byte, []byte) {
	t.Helper()
	var raw bytes.Buffer
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(&raw, rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
	}
	files := map[string][]byte{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			files[strings.TrimPrefix(h.Name, "/")] = b
		}
	}
	return files, raw.Bytes()
}

// DigestOf is l's digest.
func DigestOf(t *testing.T, l v1.Layer) v1.Hash {
	t.Helper()
	d, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// ExtractRoot writes the image's final filesystem (folders and regular
// files) into a temp folder, plus CoreOS's /lib link to usr/lib, the
// folder kmod's tools read as <root>/lib/modules.
func ExtractRoot(t *testing.T, img v1.Image) string {
	t.Helper()
	root := t.TempDir()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rel := filepath.Clean(strings.TrimPrefix(h.Name, "/"))
		if !filepath.IsLocal(rel) {
			t.Fatalf("image entry %q escapes the root", h.Name)
		}
		dst := filepath.Join(root, rel)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(tr)
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "lib")); os.IsNotExist(err) {
		if err := os.Symlink("usr/lib", filepath.Join(root, "lib")); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// WantBooted asks kmod's modinfo, as the booted kernel kver's modprobe
// would look them up (by name, through that kernel's modules.dep), for
// each module: it must be found under /usr/lib/modules/<kver>/extra/ and
// be signed by the named signer. Nothing may be left under /opt.
func WantBooted(t *testing.T, root, kver string, signers map[string]string) {
	t.Helper()
	modinfo, err := env.LookTool("modinfo")
	if err != nil {
		t.Fatal(err)
	}
	for name, signer := range signers {
		for field, want := range map[string]string{
			"filename": "/lib/modules/" + kver + "/extra/" + name + ".ko",
			"signer":   signer,
			"sig_id":   "PKCS#7",
		} {
			out, err := exec.Command(modinfo, "-b", root, "-k", kver, "-F", field, name).CombinedOutput()
			got := strings.TrimSpace(string(out))
			if field == "filename" {
				got = strings.TrimPrefix(got, root)
			}
			if err != nil || got != want {
				t.Errorf("modinfo -b <root> -k %s -F %s %s = %q, %v; want %q", kver, field, name, got, err, want)
			}
		}
	}
	if ents, err := os.ReadDir(filepath.Join(root, "opt")); err == nil {
		t.Errorf("the image still has /opt: %d entries", len(ents))
	}
}
