package registry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	configv1 "github.com/openshift/api/config/v1"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	"go.podman.io/image/v5/types"
)

const dig = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func parseRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sourceStrings writes sources as "ref" or "ref (mirror)".
func sourceStrings(ss []Source) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Ref.String()
		if s.Mirror {
			out[i] += " (mirror)"
		}
	}
	return out
}

// TestPullSourcesOrder: the sources of a reference, in the order CRI-O
// tries them, for the golden cluster configurations.
func TestPullSourcesOrder(t *testing.T) {
	cases := []struct {
		cluster, ref string
		want         []string
		err          string
	}{
		{"idms", "quay.io/openshift-release-dev/ocp-release@" + dig, []string{
			"mirror.example.com/ocp/release@" + dig + " (mirror)",
			"backup.example.com:5000/ocp/release@" + dig + " (mirror)",
			"quay.io/openshift-release-dev/ocp-release@" + dig,
		}, ""},
		{"idms", "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64", []string{"quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64"}, ""},
		{"idms", "quay.io/openshift-release-dev/other@" + dig, []string{"quay.io/openshift-release-dev/other@" + dig}, ""},
		{"itms", "registry.access.redhat.com/ubi9/ubi-minimal:9.6", []string{
			"mirror.example.com/ubi9/ubi-minimal:9.6 (mirror)", "registry.access.redhat.com/ubi9/ubi-minimal:9.6",
		}, ""},
		{"itms", "registry.access.redhat.com/ubi9/ubi-minimal@" + dig, []string{"registry.access.redhat.com/ubi9/ubi-minimal@" + dig}, ""},
		{"digest-and-tag", "quay.io/team/app@" + dig, []string{"digests.example.com/app@" + dig + " (mirror)", "quay.io/team/app@" + dig}, ""},
		{"digest-and-tag", "quay.io/team/app:v1", []string{"tags.example.com/app:v1 (mirror)", "quay.io/team/app:v1"}, ""},
		{"never-contact-source", "quay.io/openshift-release-dev/ocp-release@" + dig, []string{
			"mirror.example.com/openshift-release-dev/ocp-release@" + dig + " (mirror)",
		}, ""},
		{"never-contact-source", "quay.io/openshift-release-dev/ocp-release:4.20.0", nil,
			"every source is blocked (quay.io/openshift-release-dev/ocp-release:4.20.0); a mirror set with mirrorSourcePolicy NeverContactSource or the image config's blockedRegistries blocks it, and no mirror applies to a reference by tag"},
		{"never-contact-source", "registry.access.redhat.com/ubi9/ubi:latest", []string{"mirror.example.com/ubi9/ubi:latest (mirror)"}, ""},
		{"never-contact-source", "registry.redhat.io/rhel9/support-tools@" + dig, []string{
			"mirror.example.com/redhat/rhel9/support-tools@" + dig + " (mirror)", "registry.redhat.io/rhel9/support-tools@" + dig,
		}, ""},
		{"order", "quay.io/team/lib@" + dig, []string{
			"first.example.com/lib@" + dig + " (mirror)", "quay.io/team/lib@" + dig + " (mirror)", "last.example.com/lib@" + dig + " (mirror)", "quay.io/team/lib@" + dig,
		}, ""},
		{"order", "quay.io/team/noop@" + dig, []string{"quay.io/team/noop@" + dig}, ""},
		// The most precise source wins; a registry-wide source covers the rest.
		{"scopes", "registry.example.com/ns/repo@" + dig, []string{"other.example.com/repo@" + dig + " (mirror)", "registry.example.com/ns/repo@" + dig}, ""},
		{"scopes", "registry.example.com/ns/repo/sub@" + dig, []string{"other.example.com/repo/sub@" + dig + " (mirror)", "registry.example.com/ns/repo/sub@" + dig}, ""},
		{"scopes", "registry.example.com/ns/repository@" + dig, []string{"mirror.example.com/registry/ns/repository@" + dig + " (mirror)", "registry.example.com/ns/repository@" + dig}, ""},
		{"scopes", "console.apps.example.com/team/ui@" + dig, []string{"mirror.example.com/apps/team/ui@" + dig + " (mirror)", "console.apps.example.com/team/ui@" + dig}, ""},
		{"scopes", "apps.example.com/team/ui@" + dig, []string{"apps.example.com/team/ui@" + dig}, ""},
		// Docker Hub short names, blocked with a mirror for library/.
		{"image-config", "busybox@" + dig, []string{"mirror.example.com/insecure/library/busybox@" + dig + " (mirror)"}, ""},
		{"image-config", "docker.io/team/tool:v1", nil, "every source is blocked (docker.io/team/tool:v1)"},
		{"image-config", "quay.io/team/secret/app@" + dig, []string{"mirror.example.com/team/secret/app@" + dig + " (mirror)"}, ""},
		{"image-config", "quay.io/team/secret/app:v1", nil, "every source is blocked"},
		{"image-config", "x.a.dev.example.com/app:v1", []string{"x.a.dev.example.com/app:v1"}, ""},
		{"wildcard-spread", "a.example.com/team/app@" + dig, []string{"mirror.example.net/example/team/app@" + dig + " (mirror)"}, ""},
		{"wildcard-spread", "a.example.com/app@" + dig, []string{"mirror.example.net/example/app@" + dig + " (mirror)", "a.example.com/app@" + dig}, ""},
	}
	configs := map[string]*Config{}
	for _, c := range cases {
		t.Run(c.cluster+" "+c.ref, func(t *testing.T) {
			cfg := configs[c.cluster]
			if cfg == nil {
				cfg = fromManifests(t, filepath.Join("testdata", "fromcluster", c.cluster, "cluster.yaml"))
				configs[c.cluster] = cfg
			}
			got, err := cfg.PullSources(parseRef(t, c.ref))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q (sources %v)", err, c.err, sourceStrings(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(mapHub(c.want), sourceStrings(got)); d != "" {
				t.Fatalf("sources (-want +got):\n%s", d)
			}
		})
	}
}

// mapHub spells Docker Hub as go-containerregistry prints it.
func mapHub(refs []string) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		if strings.HasPrefix(r, "busybox@") {
			r = "index.docker.io/library/" + r
		}
		out[i] = r
	}
	return out
}

// TestPullSourcesMatchContainersImage holds PullSources to containers/image
// itself: for every golden cluster configuration and reference, the
// sources are those docker.newImageSource would try with want/'s
// registries.conf (FindRegistry, PullSourcesFromReference, then each
// source whose own entry is blocked left out), with the same insecure
// flags.
func TestPullSourcesMatchContainersImage(t *testing.T) {
	refs := []string{
		"quay.io/openshift-release-dev/ocp-release@" + dig, "quay.io/openshift-release-dev/ocp-release:4.20",
		"quay.io/openshift-release-dev/ocp-v4.0-art-dev@" + dig, "quay.io/team/app@" + dig, "quay.io/team/app:v1",
		"quay.io/team/lib@" + dig, "quay.io/team/cyc@" + dig, "quay.io/team/secret/img@" + dig, "quay.io/team/secret/img:v1",
		"registry.access.redhat.com/ubi9/ubi:9", "registry.access.redhat.com/ubi9/ubi@" + dig,
		"registry.redhat.io/rhel9/img@" + dig, "registry.redhat.io/ubi8/img@" + dig, "registry.example.com/ns/repo@" + dig,
		"registry.example.com:5000/ns/repo@" + dig, "a.apps.example.com/img@" + dig, "b.example.com/img@" + dig, "a.example.com/img2:v1", "a.example.com/team/img@" + dig,
		"docker.io/library/busybox@" + dig, "docker.io/library/busybox:1", "docker.io/team/img@" + dig,
		"insecure.example.com/img:v1", "a.dev.example.com/img:v1", "b.dev.example.com/img@" + dig, "mirror.example.com/insecure/img:v1",
	}
	cases, err := os.ReadDir(filepath.Join("testdata", "fromcluster"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		want := filepath.Join("testdata", "fromcluster", c.Name(), "want")
		cfg, err := LoadDir(want)
		if err != nil {
			t.Fatal(err)
		}
		sys := &types.SystemContext{SystemRegistriesConfPath: filepath.Join(want, RegistriesConfFile), SystemRegistriesConfDirPath: filepath.Join(want, "registries.conf.d")}
		for _, r := range refs {
			t.Run(c.Name()+" "+r, func(t *testing.T) {
				wantSources, wantErr := containersImageSources(t, sys, r)
				got, err := cfg.PullSources(parseRef(t, r))
				if (err != nil) != (wantErr != nil) {
					t.Fatalf("error %v, containers/image finds sources %v, error %v", err, wantSources, wantErr)
				}
				var gotSources []string
				for _, s := range got {
					gotSources = append(gotSources, fmt.Sprintf("%s insecure=%v", imageString(s.Ref), s.Ref.Context().Scheme() == "http"))
				}
				if d := cmp.Diff(wantSources, gotSources); d != "" {
					t.Fatalf("sources (-containers/image +kiln):\n%s", d)
				}
			})
		}
	}
}

// containersImageSources lists what containers/image would try for ref,
// or why it would try none.
func containersImageSources(t *testing.T, sys *types.SystemContext, ref string) ([]string, error) {
	t.Helper()
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := sysregistriesv2.FindRegistry(sys, named.Name())
	if err != nil {
		t.Fatal(err)
	}
	if reg == nil {
		reg = &sysregistriesv2.Registry{Prefix: named.String(), Endpoint: sysregistriesv2.Endpoint{Location: named.String()}}
	}
	pulls, err := reg.PullSourcesFromReference(named)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pulls {
		own, err := sysregistriesv2.FindRegistry(sys, p.Reference.Name())
		if err != nil {
			t.Fatal(err)
		}
		if own != nil && own.Blocked {
			continue
		}
		out = append(out, fmt.Sprintf("%s insecure=%v", p.Reference.String(), p.Endpoint.Insecure))
	}
	if len(out) == 0 {
		return nil, errors.New("every source is blocked")
	}
	return out, nil
}

// TestPullSourcesWithoutMirrors: a nil or empty Config gives ref itself,
// the very value, so the caller's options (plain HTTP) survive.
func TestPullSourcesWithoutMirrors(t *testing.T) {
	ref, err := name.ParseReference("registry.example.com/img:v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fromManifests(t, filepath.Join("testdata", "fromcluster", "idms", "cluster.yaml"))
	for _, c := range []*Config{nil, {}, cfg} {
		got, err := c.PullSources(ref)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Ref != ref || got[0].Mirror {
			t.Fatalf("sources %v, want just %v", sourceStrings(got), ref)
		}
	}
}

// TestInsecureAndCA: insecure and CA are per registry, never global.
func TestInsecureAndCA(t *testing.T) {
	in := ClusterInputs{
		Image:     imageConfig(configv1.RegistrySources{InsecureRegistries: []string{"insecure.example.com", "*.dev.example.com", "quay.io/team"}}),
		IDMS:      []configv1.ImageDigestMirrorSet{idms("m", digestMirrors("quay.io/team", "", "mirror.local:5000/team"))},
		Insecure:  []string{"localhost:5000"},
		TrustedCA: caMap(map[string]string{"mirror.example.com": testCA(t), "registry.example.com..5000": testCA(t)}),
	}
	in.Image.Spec.RegistrySources.InsecureRegistries = append(in.Image.Spec.RegistrySources.InsecureRegistries, "mirror.local:5000")
	cfg, err := FromCluster(in)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"insecure.example.com": true, "insecure.example.com:443": true, // containers/image: a host's entry covers its ports
		"a.dev.example.com": true, "dev.example.com": false, "localhost:5000": true, "localhost": false,
		"mirror.local:5000": true, "quay.io": false, "registry.example.com": false, "index.docker.io": false,
	} {
		if got := cfg.Insecure(host); got != want {
			t.Errorf("Insecure(%s) = %v, want %v", host, got, want)
		}
	}
	var nilCfg *Config
	if nilCfg.Insecure("localhost:5000") || nilCfg.CA("mirror.example.com") != nil {
		t.Error("nil Config has an insecure host or a CA")
	}
	if string(cfg.CA("mirror.example.com")) != testCA(t) || string(cfg.CA("registry.example.com:5000")) != testCA(t) {
		t.Error("CA of mirror.example.com or registry.example.com:5000 missing")
	}
	for _, h := range []string{"registry.example.com", "example.com", "mirror.example.com:443"} {
		if cfg.CA(h) != nil {
			t.Errorf("CA(%s) is set", h)
		}
	}
	// quay.io/team is insecure as a namespace: its sources may use plain
	// HTTP, quay.io itself is not insecure.
	got, err := cfg.PullSources(name.MustParseReference("quay.io/team/app@" + dig))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Ref.Context().Scheme() != "http" || got[1].Ref.Context().Scheme() != "http" {
		t.Fatalf("sources %v: want both over plain HTTP allowed", sourceStrings(got))
	}
	other, _ := cfg.PullSources(name.MustParseReference("quay.io/other/app:v1"))
	if other[0].Ref.Context().Scheme() != "https" {
		t.Fatalf("quay.io/other is %s", other[0].Ref.Context().Scheme())
	}
}
