package localrun

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	configv1 "github.com/openshift/api/config/v1"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/registry"
)

// describeRegistries names what readLocalRegistries found, for comparison.
func describeRegistries(r localRegistries) string {
	var idms, itms, icsp []string
	for _, o := range r.Inputs.IDMS {
		idms = append(idms, o.Name)
	}
	for _, o := range r.Inputs.ITMS {
		itms = append(itms, o.Name)
	}
	for _, o := range r.Inputs.ICSP {
		icsp = append(icsp, o.Name)
	}
	s := fmt.Sprintf("IDMS %v ITMS %v ICSP %v", idms, itms, icsp)
	if r.Inputs.Image != nil {
		s += " Image " + r.Inputs.Image.Name
	}
	if r.Inputs.TrustedCA != nil {
		var keys []string
		for k := range r.Inputs.TrustedCA.Data {
			keys = append(keys, k)
		}
		s += fmt.Sprintf(" CA %s/%s %v", r.Inputs.TrustedCA.Namespace, r.Inputs.TrustedCA.Name, keys)
	}
	if r.Proxy != nil {
		s += " Proxy " + r.Proxy.Name
	}
	return s
}

func writeManifests(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for f, content := range files {
		f = filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const imageWithCA = `apiVersion: config.openshift.io/v1
kind: Image
metadata:
  name: cluster
spec:
  additionalTrustedCA:
    name: registry-cas
`

// TestReadLocalRegistries: a manifests folder's mirror sets, the image
// config "cluster" with the openshift-config ConfigMap it names, and the
// Proxy "cluster" are collected; other names and namespaces are not the
// cluster's; a named CA that is missing, a second object of one name and
// an unknown field are errors that say which object and field.
func TestReadLocalRegistries(t *testing.T) {
	testdata := func(d string) string { return filepath.Join("testdata", d) }
	cases := []struct {
		name    string
		dir     func(*testing.T) string
		want    string
		wantErr []string
	}{
		{name: "disconnected cluster", dir: func(*testing.T) string { return testdata("disconnected") },
			want: "IDMS [release-mirror] ITMS [tag-mirror] ICSP [] Image cluster CA openshift-config/registry-cas [mirror.example.com..8443] Proxy cluster"},
		{name: "ImageContentSourcePolicy", dir: func(*testing.T) string { return testdata("icsp") },
			want: "IDMS [] ITMS [] ICSP [release-mirror]"},
		{name: "no registry objects", dir: func(t *testing.T) string { return localDir(t) },
			want: "IDMS [] ITMS [] ICSP []"},
		{name: "trusted CA not in the folder", dir: func(t *testing.T) string {
			return writeManifests(t, map[string]string{"image.yaml": imageWithCA})
		}, wantErr: []string{"Image cluster: spec.additionalTrustedCA.name: ConfigMap openshift-config/registry-cas is not in the folder"}},
		{name: "trusted CA in another namespace", dir: func(t *testing.T) string {
			return writeManifests(t, map[string]string{"image.yaml": imageWithCA + `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: registry-cas
  namespace: openshift-image-registry
`})
		}, wantErr: []string{"ConfigMap openshift-config/registry-cas is not in the folder"}},
		{name: "image config not named cluster", dir: func(t *testing.T) string {
			return writeManifests(t, map[string]string{"a.yaml": "apiVersion: config.openshift.io/v1\nkind: Image\nmetadata:\n  name: other\nspec: {}\n"})
		}, wantErr: []string{"Image other: metadata.name: must be \"cluster\""}},
		{name: "image config twice", dir: func(t *testing.T) string {
			return writeManifests(t, map[string]string{"a.yaml": "apiVersion: config.openshift.io/v1\nkind: Image\nmetadata:\n  name: cluster\nspec: {}\n",
				"b.yaml": "apiVersion: config.openshift.io/v1\nkind: Image\nmetadata:\n  name: cluster\nspec: {}\n"})
		}, wantErr: []string{"b.yaml: document 1: Image cluster: duplicate: also defined in", "a.yaml document 1"}},
		{name: "unknown field in a mirror set", dir: func(t *testing.T) string {
			return writeManifests(t, map[string]string{"idms.yaml": `apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata:
  name: typo
spec:
  imageDigestMirrors:
  - source: quay.io/openshift-release-dev/ocp-release
    mirror:
    - mirror.example.com/ocp-release
`})
		}, wantErr: []string{"idms.yaml", "ImageDigestMirrorSet typo", `unknown field "spec.imageDigestMirrors[0].mirror"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := readLocalRegistries(c.dir(t))
			if c.wantErr != nil {
				if err == nil {
					t.Fatalf("no error; read %s", describeRegistries(r))
				}
				for _, w := range c.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := describeRegistries(r); got != c.want {
				t.Errorf("read %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestLocalProxyEnv: the Proxy's status once the network operator
// filled it in, else its spec; the three values come from one of the two;
// upper- and lower-case names.
func TestLocalProxyEnv(t *testing.T) {
	spec := configv1.ProxySpec{HTTPProxy: "http://spec:3128", HTTPSProxy: "http://spec:3129", NoProxy: ".spec"}
	cases := []struct {
		name  string
		proxy *configv1.Proxy
		want  []string
	}{
		{"no Proxy", nil, nil},
		{"spec only", &configv1.Proxy{Spec: spec}, []string{"HTTP_PROXY=http://spec:3128", "http_proxy=http://spec:3128",
			"HTTPS_PROXY=http://spec:3129", "https_proxy=http://spec:3129", "NO_PROXY=.spec", "no_proxy=.spec"}},
		{"status wins", &configv1.Proxy{Spec: spec, Status: configv1.ProxyStatus{HTTPSProxy: "http://status:3128", NoProxy: ".spec,.cluster.local,172.30.0.0/16"}},
			[]string{"HTTPS_PROXY=http://status:3128", "https_proxy=http://status:3128",
				"NO_PROXY=.spec,.cluster.local,172.30.0.0/16", "no_proxy=.spec,.cluster.local,172.30.0.0/16"}},
		{"empty", &configv1.Proxy{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if d := cmp.Diff(c.want, localProxyEnv(c.proxy)); d != "" {
				t.Errorf("localProxyEnv (-want +got):\n%s", d)
			}
		})
	}
}

// TestRegistryObjectsAreNotInputs: adding mirror sets, an image config
// with a CA and a proxy to the folder changes no pool's fingerprint, so a
// run after adding them says nothing changed.
func TestRegistryObjectsAreNotInputs(t *testing.T) {
	dir := localDir(t)
	plan := func() map[string]string {
		t.Helper()
		snap, err := mcrender.LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := PlanLocal(context.Background(), snap, State{Pools: map[string]PoolState{}}, "0.1", asGiven)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, p := range ps {
			m[p.Pool] = p.Fingerprint.Sum
		}
		return m
	}
	before := plan()
	files, _ := filepath.Glob(filepath.Join("testdata", "disconnected", "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "registries-"+filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := readLocalRegistries(dir); err != nil || r.Inputs.Image == nil || len(r.Inputs.IDMS) != 1 {
		t.Fatalf("the folder's registry objects: %s, %v", describeRegistries(r), err)
	}
	if len(before) != 2 {
		t.Errorf("fingerprints without registry objects %v, want two", before)
	}
	if d := cmp.Diff(before, plan()); d != "" {
		t.Errorf("fingerprints changed with registry objects (-without +with):\n%s", d)
	}
}

// TestLocalRegistriesResolveThroughMirror: local mode's own tag
// resolution goes through the folder's ImageTagMirrorSet when the source
// is down, and pins the tag in the source's repository (a mirror is not
// an input); the registries folder the steps get says the same.
func TestLocalRegistriesResolveThroughMirror(t *testing.T) {
	mirror := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(mirror.Close)
	mirrorHost := strings.TrimPrefix(mirror.URL, "http://")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	source := l.Addr().String()
	l.Close() // the source is down: connections are refused
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.ParseReference(mirrorHost + "/ocp/tools:4.20")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	digest, _ := img.Digest()
	dir := writeManifests(t, map[string]string{"itms.yaml": `apiVersion: config.openshift.io/v1
kind: ImageTagMirrorSet
metadata:
  name: tools
spec:
  imageTagMirrors:
  - source: ` + source + `/ocp
    mirrors:
    - ` + mirrorHost + `/ocp
`})
	out := t.TempDir()
	cfg, stepEnv, err := setupLocalRegistries(dir, out, []string{source, mirrorHost})
	if err != nil {
		t.Fatal(err)
	}
	got, err := payload.Resolve(context.Background(), source+"/ocp/tools:4.20", registry.Remote{Config: cfg})
	if want := source + "/ocp/tools@" + digest.String(); err != nil || got != want {
		t.Fatalf("Resolve = %q, %v; want %q", got, err, want)
	}
	folder := filepath.Join(out, registriesDir)
	if d := cmp.Diff([]string{"KILN_REGISTRIES_CONFIG=" + folder}, stepEnv); d != "" {
		t.Errorf("steps' environment (-want +got):\n%s", d)
	}
	loaded, err := registry.LoadDir(folder)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(source + "/ocp/tools:4.20")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := loaded.PullSources(ref)
	if err != nil || len(srcs) != 2 || srcs[0].Ref.String() != mirrorHost+"/ocp/tools:4.20" || !srcs[0].Mirror {
		t.Errorf("the steps' registries folder pulls from %v (%v)", srcs, err)
	}
}
