package registry

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/manifests"
	"github.com/kiln-dev/kiln/test/golden"
)

// TestFromClusterGolden turns each testdata/fromcluster/<case>/cluster.yaml
// (read as directory mode reads a manifests folder) into a registries
// folder and compares it with <case>/want/: registries.conf as the nodes'
// CRI-O would have it, certs.d as MCO writes /etc/docker/certs.d.
// go test -update rewrites want/.
func TestFromClusterGolden(t *testing.T) {
	cases, err := os.ReadDir(filepath.Join("testdata", "fromcluster"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("%d cases under testdata/fromcluster", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name(), func(t *testing.T) {
			dir := filepath.Join("testdata", "fromcluster", c.Name())
			cfg := fromManifests(t, filepath.Join(dir, "cluster.yaml"))
			got := t.TempDir()
			if err := cfg.WriteDir(got); err != nil {
				t.Fatal(err)
			}
			golden.CheckTree(t, got, filepath.Join(dir, "want"))
			// The folder reads back as the Config it was written from.
			back, err := LoadDir(filepath.Join(dir, "want"))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(cfg, back, exportAll); d != "" {
				t.Fatalf("LoadDir(want) differs from FromCluster (-FromCluster +LoadDir):\n%s", d)
			}
		})
	}
}

// fromManifests reads a manifests file into a Config.
func fromManifests(t *testing.T, file string) *Config {
	t.Helper()
	dir := t.TempDir()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	if err := manifests.Walk(dir, func(o runtime.Object) error { objs = append(objs, o); return nil }); err != nil {
		t.Fatal(err)
	}
	in, err := ClusterInputsFrom(objs...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := FromCluster(in)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func readTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func idms(name string, entries ...configv1.ImageDigestMirrors) configv1.ImageDigestMirrorSet {
	return configv1.ImageDigestMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: entries}}
}

func digestMirrors(source string, policy configv1.MirrorSourcePolicy, mirrors ...configv1.ImageMirror) configv1.ImageDigestMirrors {
	return configv1.ImageDigestMirrors{Source: source, Mirrors: mirrors, MirrorSourcePolicy: policy}
}

func imageConfig(rs configv1.RegistrySources) *configv1.Image {
	return &configv1.Image{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: configv1.ImageSpec{RegistrySources: rs}}
}

func caMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "registry-cas", Namespace: "openshift-config"}, Data: data}
}

func testCA(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "ca-mirror.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFromClusterRefuses: bad input is an error naming the object, the
// field and the reason; every problem is reported, not just the first.
func TestFromClusterRefuses(t *testing.T) {
	const src = "quay.io/team/app"
	ca := testCA(t)
	cases := []struct {
		name string
		in   ClusterInputs
		want []string
	}{
		{"mirror equal to its source with NeverContactSource",
			ClusterInputs{IDMS: []configv1.ImageDigestMirrorSet{idms("m", digestMirrors(src, configv1.NeverContactSource, "mirror.example.com/app", src))}},
			[]string{`ImageDigestMirrorSet m: spec.imageDigestMirrors[0].mirrors[1]: "quay.io/team/app" is the source itself, which mirrorSourcePolicy NeverContactSource forbids`}},
		{"source with a URL scheme",
			ClusterInputs{IDMS: []configv1.ImageDigestMirrorSet{idms("m", digestMirrors("https://quay.io/team", "", "mirror.example.com/team"))}},
			[]string{`ImageDigestMirrorSet m: spec.imageDigestMirrors[0].source: "https://quay.io/team": a registry scope has no URL scheme`}},
		{"source with a tag",
			ClusterInputs{IDMS: []configv1.ImageDigestMirrorSet{idms("m", digestMirrors("quay.io/team/app:latest", "", "mirror.example.com/app"))}},
			[]string{`spec.imageDigestMirrors[0].source: "quay.io/team/app:latest": not host[:port]/namespace[/repository]`}},
		{"source with upper case path",
			ClusterInputs{IDMS: []configv1.ImageDigestMirrorSet{idms("m", digestMirrors("quay.io/Team", "", "mirror.example.com/team"))}},
			[]string{`spec.imageDigestMirrors[0].source: "quay.io/Team": not host[:port]/namespace[/repository]`}},
		{"wildcard with a path",
			ClusterInputs{IDMS: []configv1.ImageDigestMirrorSet{idms("m", digestMirrors("*.example.com/team", "", "mirror.example.com/team"))}},
			[]string{`source: "*.example.com/team": a wildcard scope is *. followed by a domain`}},
		{"wildcard mirror",
			ClusterInputs{IDMS: []configv1.ImageDigestMirrorSet{idms("m", digestMirrors(src, "", "*.example.com"))}},
			[]string{`spec.imageDigestMirrors[0].mirrors[0]: "*.example.com": a wildcard is not allowed here`}},
		{"mirror listed twice",
			ClusterInputs{IDMS: []configv1.ImageDigestMirrorSet{idms("m", digestMirrors(src, "", "a.example.com/app", "b.example.com/app", "a.example.com/app"))}},
			[]string{`spec.imageDigestMirrors[0].mirrors[2]: "a.example.com/app" is listed twice`}},
		{"unknown mirrorSourcePolicy",
			ClusterInputs{IDMS: []configv1.ImageDigestMirrorSet{idms("m", digestMirrors(src, "Sometimes", "a.example.com/app"))}},
			[]string{`spec.imageDigestMirrors[0].mirrorSourcePolicy: "Sometimes": must be AllowContactingSource or NeverContactSource`}},
		{"ICSP (contacts the source) and IDMS NeverContactSource for one source",
			ClusterInputs{
				IDMS: []configv1.ImageDigestMirrorSet{idms("new", digestMirrors(src, configv1.NeverContactSource, "a.example.com/app"))},
				ICSP: []operatorv1alpha1.ImageContentSourcePolicy{{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: operatorv1alpha1.ImageContentSourcePolicySpec{
					RepositoryDigestMirrors: []operatorv1alpha1.RepositoryDigestMirrors{{Source: src, Mirrors: []string{"b.example.com/app"}}}}}},
			},
			[]string{`ImageContentSourcePolicy old: spec.repositoryDigestMirrors[0].mirrorSourcePolicy: AllowContactingSource conflicts with NeverContactSource of ImageDigestMirrorSet new: spec.imageDigestMirrors[0] for the same source "quay.io/team/app"`}},
		{"insecure registry with a scheme, blocked wildcard with a port",
			ClusterInputs{Image: imageConfig(configv1.RegistrySources{InsecureRegistries: []string{"http://registry.local:5000"}, BlockedRegistries: []string{"*.example.com:443"}})},
			[]string{
				`Image cluster: spec.registrySources.insecureRegistries[0]: "http://registry.local:5000": a registry scope has no URL scheme`,
				`Image cluster: spec.registrySources.blockedRegistries[0]: "*.example.com:443": a wildcard scope is *. followed by a domain`,
			}},
		{"allowed and blocked registries",
			ClusterInputs{Image: imageConfig(configv1.RegistrySources{BlockedRegistries: []string{"docker.io"}, AllowedRegistries: []string{"quay.io"}})},
			[]string{`Image cluster: spec.registrySources: only one of blockedRegistries and allowedRegistries may be set`}},
		{"wildcard as a plain-HTTP host",
			ClusterInputs{Insecure: []string{"*.local"}},
			[]string{`insecure registry 0 (--insecure-registry, KILN_INSECURE_REGISTRY): "*.local": a wildcard is not allowed here`}},
		{"CA keys that are not hosts",
			ClusterInputs{TrustedCA: caMap(map[string]string{"ca-bundle_crt": ca, "registry.local..99999": ca, "../etc": ca})},
			[]string{
				`ConfigMap openshift-config/registry-cas: data[../etc]: not a registry host or host..port`,
				`ConfigMap openshift-config/registry-cas: data[ca-bundle_crt]: not a registry host or host..port`,
				`ConfigMap openshift-config/registry-cas: data[registry.local..99999]: not a registry host or host..port: the port after .. is a number from 1 to 65535`,
			}},
		{"CA values that are not certificates",
			ClusterInputs{TrustedCA: caMap(map[string]string{
				"a.example.com": "hello",
				"b.example.com": ca + "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIA==\n-----END EC PRIVATE KEY-----\n",
				"c.example.com": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
			})},
			[]string{
				`data[a.example.com]: no PEM certificate`,
				`data[b.example.com]: not a PEM certificate bundle: holds a EC PRIVATE KEY block`,
				`data[c.example.com]: certificate 1: x509: `,
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := FromCluster(c.in)
			if err == nil {
				t.Fatalf("accepted: %+v", cfg.Registries)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
			if strings.Contains(err.Error(), "MHcCAQEEIA") {
				t.Errorf("error quotes the key: %v", err)
			}
		})
	}
}

// TestFromClusterAcceptsWhatMCOAccepts: configurations MCO renders without
// complaint are not refused, even when they do nothing.
func TestFromClusterAcceptsWhatMCOAccepts(t *testing.T) {
	const src = "quay.io/team/app"
	for name, in := range map[string]ClusterInputs{
		"source among its mirrors (orders it)":         {IDMS: []configv1.ImageDigestMirrorSet{idms("m", digestMirrors(src, "", "a.example.com/app", src, "b.example.com/app"))}},
		"NeverContactSource without mirrors (ignored)": {IDMS: []configv1.ImageDigestMirrorSet{idms("m", digestMirrors(src, configv1.NeverContactSource))}},
		"ICSP mirror listed twice":                     {ICSP: []operatorv1alpha1.ImageContentSourcePolicy{{Spec: operatorv1alpha1.ImageContentSourcePolicySpec{RepositoryDigestMirrors: []operatorv1alpha1.RepositoryDigestMirrors{{Source: src, Mirrors: []string{"a.example.com/app", "a.example.com/app"}}}}}}},
		"same policy from several objects": {IDMS: []configv1.ImageDigestMirrorSet{
			idms("a", digestMirrors(src, configv1.NeverContactSource, "a.example.com/app")),
			idms("b", digestMirrors(src, configv1.NeverContactSource, "b.example.com/app")),
		}},
		"IPv4 and port hosts":     {Insecure: []string{"127.0.0.1:5000", "localhost:5000"}},
		"allowed without blocked": {Image: imageConfig(configv1.RegistrySources{AllowedRegistries: []string{"quay.io", "*.redhat.io"}})},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := FromCluster(in); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestNeverContactSourceWithoutMirrorsIsIgnored: as on the nodes, a
// policy on an entry without a real mirror blocks nothing.
func TestNeverContactSourceWithoutMirrorsIsIgnored(t *testing.T) {
	cfg, err := FromCluster(ClusterInputs{IDMS: []configv1.ImageDigestMirrorSet{idms("m", digestMirrors("quay.io/team/app", configv1.NeverContactSource))}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Registries.Registries) != 0 {
		t.Fatalf("entries %+v, want none", cfg.Registries.Registries)
	}
}

// exportAll lets cmp see the unexported fields of containers/image's
// V2RegistriesConf inside a Config, which a read-back must match too.
var exportAll = cmp.Exporter(func(reflect.Type) bool { return true })
