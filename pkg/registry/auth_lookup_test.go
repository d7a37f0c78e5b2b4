package registry_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// TestCredentialLookupOrder resolves repositories and registries against
// one auth file with entries at every level, in the order of
// containers-auth.json(5): the most specific repository namespace first,
// then the host; a host with a port is another host than without it; a
// registry (no repository) only ever gets the host's entry.
func TestCredentialLookupOrder(t *testing.T) {
	isolate(t)
	f := writeAuthFile(t, filepath.Join(t.TempDir(), "auth.json"), auths(map[string]map[string]string{
		"registry.example:5000":                 entry("host", "p"),
		"registry.example:5000/openshift":       entry("namespace", "p"),
		"registry.example:5000/openshift/rhcos": entry("repository", "p"),
		"registry.example:5000/kiln":            entry("kiln", "p"),
		"registry.example":                      entry("no-port", "p"),
		"scoped.example/openshift/rhcos":        entry("scoped-only", "p"),
		"scoped.example/openshift/rhcos/nested": entry("nested", "p"),
	}))
	r := registry.Remote{AuthFile: f}
	cases := []struct {
		resource authn.Resource
		want     string // username; "" is anonymous
	}{
		{mustRepo(t, "registry.example:5000/openshift/rhcos"), "repository"},
		{mustRepo(t, "registry.example:5000/openshift/rhcos/extensions"), "repository"},
		{mustRepo(t, "registry.example:5000/openshift/other"), "namespace"},
		{mustRepo(t, "registry.example:5000/openshift-release/rhcos"), "host"}, // a prefix of a name is no namespace
		{mustRepo(t, "registry.example:5000/kiln/node-image-worker"), "kiln"},
		{mustRepo(t, "registry.example:5000/kiln"), "kiln"},
		{mustRepo(t, "registry.example:5000/library/app"), "host"},
		{mustRegistry(t, "registry.example:5000"), "host"},
		{mustRepo(t, "registry.example/openshift/rhcos"), "no-port"},
		{mustRepo(t, "registry.example:5001/openshift/rhcos"), ""},
		{mustRepo(t, "scoped.example/openshift/rhcos"), "scoped-only"},
		{mustRepo(t, "scoped.example/openshift/rhcos/nested"), "nested"},
		{mustRepo(t, "scoped.example/openshift/rhcos/nested/deeper"), "nested"},
		{mustRepo(t, "scoped.example/kiln/node-image-worker"), ""},
		// A push once resolved its registry, not its repository: with
		// repository-scoped entries only, that is no credential at all.
		{mustRegistry(t, "scoped.example"), ""},
	}
	var got, want []string
	for _, c := range cases {
		got = append(got, c.resource.String()+" → "+resolvedUser(t, r, c.resource))
		want = append(want, c.resource.String()+" → "+c.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolved users (-want +got):\n%s", diff)
	}
}
