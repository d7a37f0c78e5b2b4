package trigger

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func writeTree(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for rel, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// mount does what the kubelet does with a ConfigMap volume's items.
func mount(t *testing.T, data map[string]string, binary map[string][]byte, items []corev1.KeyToPath) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, it := range items {
		if v, ok := data[it.Key]; ok {
			out[it.Path] = []byte(v)
		} else if b, ok := binary[it.Key]; ok {
			out[it.Path] = b
		} else {
			t.Fatalf("item %s -> %s names no key", it.Key, it.Path)
		}
	}
	return out
}

// A registries folder, hosts with ports and a binary file included, comes
// back as the same tree when its ConfigMap is mounted with the items.
func TestReadFolderMountsBackAsTheSameTree(t *testing.T) {
	files := map[string][]byte{
		"registries.conf":                       []byte("[[registry]]\nlocation = \"quay.io/openshift\"\n"),
		"certs.d/registry.example:5000/ca.crt":  []byte("-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n"),
		"certs.d/quay.io/ca.crt":                []byte("-----BEGIN CERTIFICATE-----\nB\n-----END CERTIFICATE-----\n"),
		"certs.d/[fd00::1]:5000/ca.crt":         []byte("-----BEGIN CERTIFICATE-----\nC\n-----END CERTIFICATE-----\n"), // no key may hold [ ]
		"certs.d/registry.example:5000/ca.der":  {0x30, 0x82, 0xff, 0xfe},
		"certs.d/registry.example_5000/ca.crt":  []byte("an underscore host is another host"),
		"certs.d/registry.example..5000/ca.crt": []byte("as is a host with dots"),
	}
	dir := t.TempDir()
	writeTree(t, dir, files)
	// A host of two dots and one of a colon spell the same key: refused.
	if _, err := readFolder(dir); err == nil || !strings.Contains(err.Error(), "same ConfigMap key") {
		t.Fatalf("readFolder with colliding keys: err %v", err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "certs.d", "registry.example..5000")); err != nil {
		t.Fatal(err)
	}
	delete(files, "certs.d/registry.example..5000/ca.crt")

	fd, err := readFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range fd.Items {
		if errs := validation.IsConfigMapKey(it.Key); len(errs) > 0 {
			t.Errorf("key %q: %v", it.Key, errs)
		}
	}
	if _, ok := fd.Binary[folderKey("certs.d/registry.example:5000/ca.der")]; !ok {
		t.Errorf("the binary file is not in binaryData: %v", fd.Binary)
	}
	got := mount(t, fd.Data, fd.Binary, fd.Items)
	if len(got) != len(files) {
		t.Fatalf("mounted %d files, want %d: %v", len(got), len(files), fd.Items)
	}
	for rel, want := range files {
		if !bytes.Equal(got[rel], want) {
			t.Errorf("%s mounted as %q, want %q", rel, got[rel], want)
		}
	}
}

func TestReadFolderRefuses(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		wantErr string
	}{
		{"a symlink", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string][]byte{"registries.conf": []byte("x")})
			if err := os.Symlink("registries.conf", filepath.Join(dir, "link.conf")); err != nil {
				t.Fatal(err)
			}
		}, "link.conf is not a regular file"},
		{"more than a ConfigMap holds", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string][]byte{"certs.d/a/ca.crt": bytes.Repeat([]byte("a"), maxConfigMapBytes/2), "certs.d/b/ca.crt": bytes.Repeat([]byte("b"), maxConfigMapBytes/2)})
		}, "the most a ConfigMap holds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.setup(t, dir)
			_, err := readFolder(dir)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

// An empty folder (no mirrors, no CAs) is an empty ConfigMap: a step gets
// an empty registries folder, which means the defaults.
func TestReadFolderEmpty(t *testing.T) {
	fd, err := readFolder(t.TempDir())
	if err != nil || len(fd.Data)+len(fd.Binary)+len(fd.Items) != 0 {
		t.Fatalf("readFolder(empty) = %+v, %v", fd, err)
	}
}
