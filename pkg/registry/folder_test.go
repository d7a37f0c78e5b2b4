package registry

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.podman.io/image/v5/pkg/sysregistriesv2"
)

// writeFiles lays out files (relative path → content) under a new folder.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadDirEmptyPathIsNoConfig(t *testing.T) {
	cfg, err := LoadDir("")
	if cfg != nil || err != nil {
		t.Fatalf("LoadDir(\"\") = %v, %v; want nil, nil", cfg, err)
	}
}

// TestLoadDirRefuses: a folder kiln or containers/image would misread is
// an error naming the file and the reason.
func TestLoadDirRefuses(t *testing.T) {
	ca := testCA(t)
	const conf = "[[registry]]\nlocation = \"quay.io\"\n"
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no registries.conf", map[string]string{"certs.d/quay.io/ca.crt": ca}, "registries.conf: no such file or directory"},
		{"misspelt key", map[string]string{"registries.conf": "[[registry]]\nlocation = \"quay.io\"\nblock = true\n"}, "unknown key registry.block"},
		{"v1 format", map[string]string{"registries.conf": "[registries.search]\nregistries = [\"quay.io\"]\n"}, "unknown key registries.search"},
		{"not TOML", map[string]string{"registries.conf": "[[registry]\n"}, "reading "},
		{"URL location", map[string]string{"registries.conf": "[[registry]]\nlocation = \"https://quay.io\"\n"}, "invalid location 'https://quay.io': URI schemes are not supported"},
		{"conflicting insecure", map[string]string{"registries.conf": "[[registry]]\nlocation = \"quay.io\"\ninsecure = true\n[[registry]]\nprefix = \"quay.io/x\"\nlocation = \"quay.io\"\n"}, "conflicting 'insecure' setting"},
		{"drop-in folder", map[string]string{"registries.conf": conf, "registries.conf.d/a.conf": conf}, "drop-in folders are not supported"},
		{"certs.d file", map[string]string{"registries.conf": conf, "certs.d/ca.crt": ca}, "certs.d/ca.crt: not a folder named for a registry host[:port]"},
		{"certs.d folder not a host", map[string]string{"registries.conf": conf, "certs.d/quay.io_x/ca.crt": ca}, "certs.d/quay.io_x: not a folder named for a registry host[:port]"},
		{"client certificate", map[string]string{"registries.conf": conf, "certs.d/quay.io/client.cert": ca}, "certs.d/quay.io/client.cert: client certificates are not supported"},
		{"CA not PEM", map[string]string{"registries.conf": conf, "certs.d/quay.io:8443/ca.crt": "hello"}, "certs.d/quay.io:8443/ca.crt: no PEM certificate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeFiles(t, c.files)
			cfg, err := LoadDir(dir)
			if err == nil {
				t.Fatalf("accepted: %+v", cfg)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q, want one naming %s and containing %q", err, dir, c.want)
			}
		})
	}
	t.Run("missing folder", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "registries")
		if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), dir) {
			t.Fatalf("error %v, want one naming %s", err, dir)
		}
	})
}

// TestLoadDirReadsWhatContainersImageReads: every *.crt of a host is a CA
// (name order), other files are ignored as containers/image ignores them,
// and a Kubernetes volume's ..data entries are skipped.
func TestLoadDirReadsWhatContainersImageReads(t *testing.T) {
	a := testCA(t)
	b, err := os.ReadFile(filepath.Join("testdata", "ca-registry-5000.pem"))
	if err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, map[string]string{
		"registries.conf":                                "[[registry]]\nlocation = \"registry.example.com:5000\"\ninsecure = true\n",
		"certs.d/registry.example.com:5000/b.crt":        string(b),
		"certs.d/registry.example.com:5000/a.crt":        a,
		"certs.d/registry.example.com:5000/README":       "notes",
		"certs.d/..2026_11_26/mirror.example.com/ca.crt": a,
	})
	cfg, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(cfg.CA("registry.example.com:5000")), a+string(b); got != want {
		t.Fatalf("CA\n%s\nwant\n%s", got, want)
	}
	if len(cfg.CAs) != 1 || !cfg.Insecure("registry.example.com:5000") {
		t.Fatalf("CAs %v, insecure %v", cfg.CAs, cfg.Insecure("registry.example.com:5000"))
	}
}

// TestWriteDirNilConfigWritesEmptyConf: a step handed the folder of "no
// configuration" reads an empty registries.conf, never the machine's.
func TestWriteDirNilConfigWritesEmptyConf(t *testing.T) {
	dir := t.TempDir()
	var c *Config
	if err := c.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Registries.Registries) != 0 || cfg.CAs != nil {
		t.Fatalf("read back %+v", cfg)
	}
}

func TestWriteDirRefuses(t *testing.T) {
	ca := []byte(testCA(t))
	cases := map[string]*Config{
		"CA host with a path":    {CAs: map[string][]byte{"../etc": ca}},
		"CA host with a slash":   {CAs: map[string][]byte{"quay.io/x": ca}},
		"CA not PEM":             {CAs: map[string][]byte{"quay.io": []byte("hello")}},
		"URL scheme in location": {Registries: sysregistriesv2.V2RegistriesConf{Registries: []sysregistriesv2.Registry{{Endpoint: sysregistriesv2.Endpoint{Location: "http://quay.io"}}}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			if err := c.WriteDir(filepath.Join(parent, "r")); err == nil {
				t.Fatal("accepted")
			}
			if _, err := os.Stat(filepath.Join(parent, "etc")); err == nil {
				t.Fatal("wrote outside the folder")
			}
		})
	}
}

// TestWriteDirDeterministic: the same Config gives the same bytes, CAs in
// any map order.
func TestWriteDirDeterministic(t *testing.T) {
	cfg := fromManifests(t, filepath.Join("testdata", "fromcluster", "trusted-ca", "cluster.yaml"))
	var first map[string][]byte
	for i := 0; i < 5; i++ {
		dir := t.TempDir()
		if err := cfg.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		tree := readTree(t, dir)
		if first == nil {
			first = tree
			continue
		}
		for name, data := range first {
			if !bytes.Equal(tree[name], data) {
				t.Fatalf("%s differs between two writes", name)
			}
		}
	}
}
