package registry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/pkg/step"
)

// TestRemoteFromRegistriesConfig: --registries-config (default
// $KILN_REGISTRIES_CONFIG) is read by RemoteFrom; the "" Tekton makes of an
// unbound optional workspace means no folder; a folder that cannot be
// read is an error naming the flag and the path.
func TestRemoteFromRegistriesConfig(t *testing.T) {
	dir := t.TempDir()
	conf := `[[registry]]
prefix = "quay.io/openshift-release-dev"
location = "quay.io/openshift-release-dev"
mirror-by-digest-only = true

[[registry.mirror]]
location = "mirror.example:5000/ocp"
`
	if err := os.WriteFile(filepath.Join(dir, RegistriesConfFile), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "not-a-folder")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	const ref = "quay.io/openshift-release-dev/ocp-release@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cases := []struct {
		name, env string
		args      []string
		mirrors   bool   // the Remote's reads of ref try the mirror
		wantErr   string // "" for no error
	}{
		{name: "no flag, no environment: no Config"},
		{name: "unbound optional workspace", args: []string{"--registries-config="}},
		{name: "unbound workspace overrides the environment", env: dir, args: []string{"--registries-config="}},
		{name: "flag", args: []string{"--registries-config=" + dir}, mirrors: true},
		{name: "environment", env: dir, mirrors: true},
		{name: "missing folder", args: []string{"--registries-config=/nonexistent/registries"}, wantErr: "/nonexistent/registries"},
		{name: "a file, not a folder", args: []string{"--registries-config=" + file}, wantErr: file},
	}
	parsed, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("KILN_REGISTRIES_CONFIG", c.env)
			var o step.RegistryOptions
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			r, err := RemoteFrom(o)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), "--registries-config") || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one naming --registries-config and %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (r.Config != nil) != c.mirrors {
				t.Fatalf("Config %v, want one: %v", r.Config, c.mirrors)
			}
			sources, err := r.sources(parsed)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(sources) > 1 && sources[0].Mirror && sources[0].Ref.String() == "mirror.example:5000/ocp/ocp-release@"+parsed.Identifier(); got != c.mirrors {
				t.Errorf("sources %v: mirror first %v, want %v", sources, got, c.mirrors)
			}
		})
	}
}
