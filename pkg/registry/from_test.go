package registry

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// TestRemoteFromRegistriesConfig: --registries-config is read by
// RemoteFrom; the "" Tekton makes of an unbound optional workspace means no
// folder; a folder that cannot be read is an error naming the flag and the
// path. (Its $KILN_REGISTRIES_CONFIG default, and "" overriding the
// environment, are the command line's: cmd/cli TestEnvDefaults.)
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
		name, configDir string
		mirrors         bool   // the Remote's reads of ref try the mirror
		wantErr         string // "" for no error
	}{
		{name: "unbound optional workspace: no Config"},
		{name: "folder", configDir: dir, mirrors: true},
		{name: "missing folder", configDir: "/nonexistent/registries", wantErr: "/nonexistent/registries"},
		{name: "a file, not a folder", configDir: file, wantErr: file},
	}
	parsed, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := RemoteFrom(RegistryOptions{ConfigDir: c.configDir})
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

// TestRemoteFromRefusesAnInsecureRegistryThatIsNotAHost: a step matches
// --insecure-registry against each reference's host, so an entry with a
// scheme or a path would silently match nothing; it is refused as a usage
// error (exit 2) naming the entry, and a host[:port] is taken as given.
func TestRemoteFromRefusesAnInsecureRegistryThatIsNotAHost(t *testing.T) {
	cases := []struct {
		entry string
		want  string // "" accepted
	}{
		{"localhost:5000", ""},
		{"registry.example.com", ""},
		{"10.0.0.1:5000", ""},
		{"http://localhost:5000", `--insecure-registry "http://localhost:5000" (or KILN_INSECURE_REGISTRY): want a registry host[:port], without scheme or path`},
		{"localhost:5000/ns", `--insecure-registry "localhost:5000/ns" (or KILN_INSECURE_REGISTRY): want a registry host[:port], without scheme or path`},
		{"", `--insecure-registry "" (or KILN_INSECURE_REGISTRY): want a registry host[:port], without scheme or path`},
		{"host:port", `--insecure-registry "host:port" (or KILN_INSECURE_REGISTRY): want a registry host[:port], without scheme or path`},
	}
	for _, c := range cases {
		t.Run(c.entry, func(t *testing.T) {
			r, err := RemoteFrom(RegistryOptions{Insecure: []string{c.entry}})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("RemoteFrom: %v", err)
			case c.want == "":
				if !slices.Equal(r.Insecure, []string{c.entry}) {
					t.Errorf("Insecure = %q, want [%q]", r.Insecure, c.entry)
				}
			case err == nil:
				t.Fatalf("RemoteFrom accepted %q", c.entry)
			default:
				if !strings.HasPrefix(err.Error(), c.want) {
					t.Errorf("error %q, want it to start with %q", err, c.want)
				}
				if got := exitcode.CodeOf(err); got != exitcode.ExitUsage {
					t.Errorf("exit code %d, want %d", got, exitcode.ExitUsage)
				}
			}
		})
	}
}
