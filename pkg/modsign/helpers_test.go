package modsign_test

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/kiln-dev/kiln/test/env"
)

// These helpers read a signed image back as a node would see it; they are
// the same as pkg/kmod's tests' (a test package's helpers cannot be
// imported).

// flattenImage returns the final filesystem's regular files and the
// concatenated raw layer tars (to look for leaked secrets).
func flattenImage(t *testing.T, img v1.Image) (map[string][]byte, []byte) {
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

func digestOf(t *testing.T, l v1.Layer) v1.Hash {
	t.Helper()
	d, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// extractRoot writes the image's final filesystem (folders and regular
// files) into a temp folder, plus CoreOS's /lib link to usr/lib, the
// folder kmod's tools read as <root>/lib/modules.
func extractRoot(t *testing.T, img v1.Image) string {
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

// wantBooted asks kmod's modinfo, as the booted kernel kver's modprobe
// would look them up (by name, through that kernel's modules.dep), for
// each module: it must be found under /usr/lib/modules/<kver>/extra/ and
// be signed by the named signer. Nothing may be left under /opt.
func wantBooted(t *testing.T, root, kver string, signers map[string]string) {
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
