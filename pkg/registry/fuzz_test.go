package registry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
)

var fuzzRefs = []string{
	"quay.io/team/app@" + dig, "quay.io/team/app:v1", "registry.example.com:5000/ns/repo@" + dig,
	"a.example.com/team/img:v1", "busybox:1", "localhost:5000/img@" + dig,
}

// FuzzLoadDir: any registries.conf and CA file either is refused or reads
// back unchanged after WriteDir, and PullSources never panics on it.
func FuzzLoadDir(f *testing.F) {
	for _, c := range []string{"idms", "image-config", "scopes", "order"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "fromcluster", c, "want", RegistriesConfFile))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, []byte(nil))
	}
	ca, err := os.ReadFile(filepath.Join("testdata", "ca-mirror.pem"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("[[registry]]\nprefix = \"*.example.com\"\nblocked = true\n"), ca)
	f.Add([]byte("unqualified-search-registries = []\n[aliases]\nx = \"quay.io/x\"\n"), []byte("junk"))
	f.Fuzz(func(t *testing.T, conf, crt []byte) {
		files := map[string]string{RegistriesConfFile: string(conf)}
		if len(crt) > 0 {
			files["certs.d/quay.io/ca.crt"] = string(crt)
		}
		cfg, err := LoadDir(writeFiles(t, files))
		if err != nil {
			return
		}
		out := t.TempDir()
		if err := cfg.WriteDir(out); err != nil {
			t.Fatalf("WriteDir of a loaded Config: %v", err)
		}
		back, err := LoadDir(out)
		if err != nil {
			t.Fatalf("LoadDir of a written Config: %v", err)
		}
		if d := cmp.Diff(cfg, back, exportAll); d != "" {
			t.Fatalf("read back differs from written (-wrote +read):\n%s", d)
		}
		for _, r := range fuzzRefs {
			_, _ = cfg.PullSources(parseRef(t, r))
		}
	})
}

// FuzzCAHost: a trusted CA key either is refused or names a host[:port]
// that is a safe folder name and spells the key back.
func FuzzCAHost(f *testing.F) {
	for _, k := range []string{"mirror.example.com", "registry.example.com..5000", "10.0.0.1..443", "../etc", "a..b..c", "host..05000", "ca-bundle.crt"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		host, err := caHost(key)
		if err != nil {
			return
		}
		if !anchoredDomain().MatchString(host) || strings.ContainsAny(host, `/\`) || strings.Contains(host, "..") {
			t.Fatalf("key %q gives host %q", key, host)
		}
		if strings.Replace(host, ":", "..", 1) != key {
			t.Fatalf("key %q gives host %q, which does not spell it back", key, host)
		}
	})
}

// FuzzCheckScope: a scope kiln accepts as a mirror source and as a
// blocked and insecure registry gives a registries.conf containers/image
// loads, and pull sources without panics.
func FuzzCheckScope(f *testing.F) {
	for _, s := range []string{"quay.io", "quay.io/team/app", "*.example.com", "registry.example.com:5000/ns", "[::1]:5000/x", "localhost", "quay.io/Team", "*.example.com:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkScope(s, true) != nil {
			return
		}
		in := ClusterInputs{
			IDMS:  []configv1.ImageDigestMirrorSet{idms("m", digestMirrors(s, "", "mirror.example.com/m"))},
			Image: imageConfig(configv1.RegistrySources{BlockedRegistries: []string{s}, InsecureRegistries: []string{s}}),
		}
		cfg, err := FromCluster(in)
		if err != nil {
			t.Fatalf("scope %q accepted by checkScope, refused by FromCluster: %v", s, err)
		}
		if err := cfg.WriteDir(t.TempDir()); err != nil {
			t.Fatalf("scope %q: %v", s, err)
		}
		for _, r := range fuzzRefs {
			_, _ = cfg.PullSources(parseRef(t, r))
		}
	})
}
