package registry_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

// Every credential form is tried against a real docker-registry with TLS
// and htpasswd: a push and a pull succeed only with the right user.

const (
	alice, alicePass = "alice", "alice-s3cret"
	bob, bobPass     = "bob", "bob-s3cret"
)

// isolate hides this machine's own credentials (default files, env).
func isolate(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	for _, v := range []string{"REGISTRY_AUTH_FILE", "DOCKER_CONFIG"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
}

func authRegistry(t *testing.T) *env.Registry {
	t.Helper()
	isolate(t)
	return env.StartRegistry(t, env.RegistryOptions{TLS: true, Users: map[string]string{alice: alicePass, bob: bobPass}})
}

func entry(user, pass string) map[string]string {
	return map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))}
}

func writeAuthFile(t *testing.T, path string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func auths(entries map[string]map[string]string) map[string]any {
	return map[string]any{"auths": entries}
}

// remoteFor reaches reg (trusting its CA) with the credentials of authFile.
func remoteFor(reg *env.Registry, authFile string) registry.Remote {
	return registry.Remote{AuthFile: authFile, Transport: reg.Transport(), Backoff: remote.Backoff{Steps: 1}}
}

// pushPull pushes a small image to ref and reads it back.
func pushPull(t *testing.T, r registry.Remote, ref string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := r.ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Write(ctx, parsed, img); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	if _, err := r.Get(ctx, parsed); err != nil {
		return fmt.Errorf("pulling %s: %w", ref, err)
	}
	return nil
}

func wantOK(t *testing.T, r registry.Remote, ref string) {
	t.Helper()
	if err := pushPull(t, r, ref); err != nil {
		t.Fatalf("push and pull %s with %s: %v", ref, r.AuthFile, err)
	}
}

func wantAuthError(t *testing.T, r registry.Remote, ref string) {
	t.Helper()
	if err := registry.Classify(pushPull(t, r, ref), "pushing and pulling", ref); !errors.Is(err, registry.ErrAuth) {
		t.Fatalf("push and pull %s with %s: %v, want %v", ref, r.AuthFile, err, registry.ErrAuth)
	}
}

func TestCredentialsPlainHostKeyAuthenticates(t *testing.T) {
	reg := authRegistry(t)
	dir := t.TempDir()
	good := writeAuthFile(t, filepath.Join(dir, "good.json"), auths(map[string]map[string]string{reg.Host: entry(alice, alicePass)}))
	wrong := writeAuthFile(t, filepath.Join(dir, "wrong.json"), auths(map[string]map[string]string{reg.Host: entry(alice, "nope")}))
	wantOK(t, remoteFor(reg, good), reg.Ref("org/app:1"))
	wantAuthError(t, remoteFor(reg, wrong), reg.Ref("org/app:1"))
	wantAuthError(t, remoteFor(reg, ""), reg.Ref("org/app:1")) // no credentials anywhere
}

func TestCredentialsURLKeyAuthenticates(t *testing.T) {
	reg := authRegistry(t)
	// docker login of old wrote URLs; containers/image matches their host.
	for _, key := range []string{"https://" + reg.Host, "https://" + reg.Host + "/v1/", "http://" + reg.Host} {
		t.Run(key, func(t *testing.T) {
			f := writeAuthFile(t, filepath.Join(t.TempDir(), "auth.json"), auths(map[string]map[string]string{key: entry(alice, alicePass)}))
			wantOK(t, remoteFor(reg, f), reg.Ref("org/app:1"))
		})
	}
}

// Docker Hub cannot be reached from the test machine: its key is checked
// on the keychain alone.
func TestCredentialsDockerHubLegacyKeyResolvesForDockerIO(t *testing.T) {
	isolate(t)
	cases := []struct {
		key      string
		resource authn.Resource
		want     string // username; "" means anonymous
	}{
		{"https://index.docker.io/v1/", mustRepo(t, "busybox"), "hub"},
		{"https://index.docker.io/v1/", mustRepo(t, "docker.io/library/busybox"), "hub"},
		{"https://index.docker.io/v1/", mustRepo(t, "index.docker.io/org/app"), "hub"},
		{"https://index.docker.io/v1/", mustRegistry(t, "docker.io"), "hub"},
		{"https://index.docker.io/v1/", mustRegistry(t, "index.docker.io"), "hub"},
		{"https://index.docker.io/v1/", mustRepo(t, "quay.io/org/app"), ""},
		{"docker.io", mustRepo(t, "busybox"), "hub"},         // as podman login writes it
		{"docker.io/org/app", mustRepo(t, "org/app"), "hub"}, // repository-scoped on Docker Hub
		{"docker.io/org/app", mustRepo(t, "org/other"), ""},  // … and only there
		{"docker.io/org/app", mustRepo(t, "index.docker.io/org/app"), "hub"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d %s %s", i, c.key, c.resource), func(t *testing.T) {
			f := writeAuthFile(t, filepath.Join(t.TempDir(), "auth.json"), auths(map[string]map[string]string{c.key: entry("hub", "hub-pass")}))
			if got := resolvedUser(t, registry.Remote{AuthFile: f}, c.resource); got != c.want {
				t.Fatalf("user for %s: %q, want %q", c.resource, got, c.want)
			}
		})
	}
}

func mustRepo(t *testing.T, s string) name.Repository {
	r, err := name.NewRepository(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustRegistry(t *testing.T, s string) name.Registry {
	r, err := name.NewRegistry(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// resolvedUser is the username the keychain of r gives res ("" for none).
func resolvedUser(t *testing.T, r registry.Remote, res authn.Resource) string {
	t.Helper()
	kc, err := r.Keychain()
	if err != nil {
		t.Fatal(err)
	}
	a, err := kc.Resolve(res)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := a.Authorization()
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Username
}

func TestCredentialsRepositoryScopedDoNotLeakToOtherRepositories(t *testing.T) {
	reg := authRegistry(t)
	f := writeAuthFile(t, filepath.Join(t.TempDir(), "auth.json"), auths(map[string]map[string]string{
		reg.Host + "/org/repo": entry(alice, alicePass),
	}))
	r := remoteFor(reg, f)
	wantOK(t, r, reg.Ref("org/repo:1"))
	wantOK(t, r, reg.Ref("org/repo/sub:1")) // a sub-repository is under the prefix
	wantAuthError(t, r, reg.Ref("org/other:1"))
	wantAuthError(t, r, reg.Ref("org/repository:1")) // a prefix of the name, not of the path
	if u := resolvedUser(t, r, mustRepo(t, reg.Ref("org/other"))); u != "" {
		t.Fatalf("org/other resolved to user %q, want anonymous", u)
	}
}

func TestCredentialsLongestPrefixFirst(t *testing.T) {
	reg := authRegistry(t)
	// bob's entry for the namespace is wrong on purpose: org/repo works only
	// if its own, longer entry (alice) wins, and org/other proves the
	// namespace entry applies where no longer one does.
	f := writeAuthFile(t, filepath.Join(t.TempDir(), "auth.json"), auths(map[string]map[string]string{
		reg.Host + "/org":      entry(bob, "wrong"),
		reg.Host + "/org/repo": entry(alice, alicePass),
		reg.Host:               entry(bob, bobPass),
	}))
	r := remoteFor(reg, f)
	wantOK(t, r, reg.Ref("org/repo:1"))
	wantAuthError(t, r, reg.Ref("org/other:1"))
	wantOK(t, r, reg.Ref("elsewhere/app:1")) // the registry-wide entry
	for repo, want := range map[string]string{"org/repo": alice, "org/other": bob, "elsewhere/app": bob} {
		if u := resolvedUser(t, r, mustRepo(t, reg.Ref(repo))); u != want {
			t.Errorf("%s resolved to user %q, want %q", repo, u, want)
		}
	}
}

// installHelper puts docker-credential-<helper> on PATH: it answers get for
// host with user and password, "not found" for any other server, and
// records each server it is asked about in the returned file.
func installHelper(t *testing.T, helper, host, user, pass string) (asked string) {
	t.Helper()
	dir := t.TempDir()
	asked = filepath.Join(dir, "asked")
	script := fmt.Sprintf(`#!/bin/sh
[ "$1" = get ] || { echo "unsupported: $1"; exit 1; }
read -r server
echo "$server" >> %q
if [ "$server" = %q ]; then
  printf '{"ServerURL":"%%s","Username":%q,"Secret":%q}\n' "$server"
  exit 0
fi
echo "credentials not found in native keychain"
exit 1
`, asked, host, user, pass)
	if err := os.WriteFile(filepath.Join(dir, "docker-credential-"+helper), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return asked
}

func askedServers(t *testing.T, asked string) []string {
	t.Helper()
	b, err := os.ReadFile(asked)
	if err != nil {
		t.Fatalf("the credential helper was never run: %v", err)
	}
	return strings.Fields(string(b))
}

func TestCredentialsCredHelpersEntryAsksTheHelper(t *testing.T) {
	reg := authRegistry(t)
	asked := installHelper(t, "kilntest", reg.Host, alice, alicePass)
	f := writeAuthFile(t, filepath.Join(t.TempDir(), "config.json"), map[string]any{
		"credHelpers": map[string]string{reg.Host: "kilntest"},
	})
	wantOK(t, remoteFor(reg, f), reg.Ref("org/app:1"))
	for _, s := range askedServers(t, asked) {
		if s != reg.Host {
			t.Fatalf("helper asked about %q, want only %q", s, reg.Host)
		}
	}
}

func TestCredentialsCredsStoreServesEveryRegistry(t *testing.T) {
	reg := authRegistry(t)
	asked := installHelper(t, "kilnstore", reg.Host, alice, alicePass)
	// As docker login writes it with a store: an empty marker entry.
	f := writeAuthFile(t, filepath.Join(t.TempDir(), "config.json"), map[string]any{
		"credsStore": "kilnstore",
		"auths":      map[string]any{reg.Host: map[string]string{}},
	})
	r := remoteFor(reg, f)
	wantOK(t, r, reg.Ref("org/app:1"))
	if got := askedServers(t, asked); len(got) == 0 || got[0] != reg.Host {
		t.Fatalf("store asked about %q, want %q", got, reg.Host)
	}
	// Docker Hub is asked for under its legacy key, as Docker's client does.
	if u := resolvedUser(t, r, mustRepo(t, "busybox")); u != "" {
		t.Fatalf("docker.io resolved to %q, want anonymous", u)
	}
	if got := askedServers(t, asked); got[len(got)-1] != "https://index.docker.io/v1/" {
		t.Fatalf("store asked about %q for Docker Hub, want https://index.docker.io/v1/", got[len(got)-1])
	}
}

func TestCredentialsRegistryAuthFileEnvironment(t *testing.T) {
	reg := authRegistry(t)
	f := writeAuthFile(t, filepath.Join(t.TempDir(), "auth.json"), auths(map[string]map[string]string{reg.Host: entry(alice, alicePass)}))
	t.Setenv("REGISTRY_AUTH_FILE", f)
	// A step's --registry-auth-file defaults to it (cmd/cli
	// TestEnvDefaults) and RemoteFrom uses the file …
	r, err := registry.RemoteFrom(registry.RegistryOptions{AuthFile: os.Getenv("REGISTRY_AUTH_FILE")})
	if err != nil {
		t.Fatal(err)
	}
	r.Transport, r.Backoff = reg.Transport(), remote.Backoff{Steps: 1}
	wantOK(t, r, reg.Ref("org/app:1"))
	// … and a Remote without a file reads it, as podman does.
	wantOK(t, remoteFor(reg, ""), reg.Ref("org/app:2"))
}

// mountPullSecret lays a kubernetes.io/dockerconfigjson Secret out as the
// kubelet mounts it: the key is a symlink into a timestamped folder.
func mountPullSecret(t *testing.T, v any) string {
	t.Helper()
	dir := t.TempDir()
	writeAuthFile(t, filepath.Join(dir, "..2024_01_01_00_00_00.1", ".dockerconfigjson"), v)
	if err := os.Symlink("..2024_01_01_00_00_00.1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", ".dockerconfigjson"), filepath.Join(dir, ".dockerconfigjson")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCredentialsKubernetesPullSecretWorkspace(t *testing.T) {
	reg := authRegistry(t)
	// As `oc create secret docker-registry` writes it.
	e := entry(alice, alicePass)
	e["username"], e["password"], e["email"] = alice, alicePass, ""
	dir := mountPullSecret(t, auths(map[string]map[string]string{reg.Host: e}))
	// A Task passes $(workspaces.registry-auth.path)/config.json.
	r, err := registry.RemoteFrom(registry.RegistryOptions{AuthFile: filepath.Join(dir, "config.json")})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, ".dockerconfigjson"); r.AuthFile != want {
		t.Fatalf("auth file %q, want %q", r.AuthFile, want)
	}
	r.Transport, r.Backoff = reg.Transport(), remote.Backoff{Steps: 1}
	wantOK(t, r, reg.Ref("org/app:1"))
}

func TestRemoteFromAuthFilePath(t *testing.T) {
	secret := mountPullSecret(t, auths(nil))
	plain := t.TempDir()
	file := writeAuthFile(t, filepath.Join(plain, "auth.json"), auths(nil))
	dockerDir := t.TempDir()
	docker := writeAuthFile(t, filepath.Join(dockerDir, "config.json"), auths(nil))
	empty := t.TempDir()
	cases := []struct{ name, flag, want string }{
		{"unset", "", ""},
		{"a file", file, file},
		{"a missing file next to a pull secret", filepath.Join(secret, "config.json"), filepath.Join(secret, ".dockerconfigjson")},
		{"a pull secret folder", secret, filepath.Join(secret, ".dockerconfigjson")},
		{"a folder with config.json", dockerDir, docker},
		{"a missing file next to auth.json only", filepath.Join(plain, "config.json"), filepath.Join(plain, "config.json")},
		{"an empty folder", empty, empty},
		{"an unbound optional workspace", "/config.json", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := registry.RemoteFrom(registry.RegistryOptions{AuthFile: c.flag})
			if err != nil {
				t.Fatal(err)
			}
			if r.AuthFile != c.want {
				t.Fatalf("auth file of %q: %q, want %q", c.flag, r.AuthFile, c.want)
			}
		})
	}
}

func TestKeychainErrorsNameTheFileNotItsContents(t *testing.T) {
	isolate(t)
	const secret = "hunter2-TOPSECRET"
	b64 := base64.StdEncoding.EncodeToString([]byte("user:" + secret))
	cases := map[string]struct{ content, want string }{
		"truncated":              {`{"auths":{"q.io":{"auth":"` + b64, "truncated"},
		"syntax":                 {`{"auths":{"q.io":{"auth":"` + b64 + `"}}}}` + secret, "invalid JSON at byte"},
		"bad character":          {`{"auths":{"q.io":{"auth":` + secret + `}}}`, "invalid JSON at byte"},
		"not base64":             {`{"auths":{"q.io":{"auth":"` + secret + `"}}}`, `"q.io": auth is not base64`},
		"no colon":               {`{"auths":{"q.io":{"auth":"` + base64.StdEncoding.EncodeToString([]byte(secret)) + `"}}}`, "user:password"},
		"password without auth":  {`{"auths":{"q.io":{"username":"u","password":"` + secret + `"}}}`, "without auth"},
		"wrong type":             {`{"auths":{"q.io":{"auth":42}}}`, "is not a string"},
		"empty":                  {``, "empty"},
		"not an object":          {`["` + secret + `"]`, "not a docker config.json"},
		"empty credHelpers name": {`{"credHelpers":{"q.io":""}}`, "empty helper name"},
	}
	for n, c := range cases {
		t.Run(n, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "auth.json")
			if err := os.WriteFile(f, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := registry.Remote{AuthFile: f}.Keychain()
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, f) || !strings.Contains(msg, c.want) {
				t.Fatalf("error %q: want the file %s and %q", msg, f, c.want)
			}
			if strings.Contains(msg, secret) || strings.Contains(msg, b64) || strings.Contains(msg, "hunter") {
				t.Fatalf("error quotes the file's contents: %q", msg)
			}
		})
	}
	if _, err := (registry.Remote{AuthFile: filepath.Join(t.TempDir(), "missing.json")}).Keychain(); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("missing file: %v, want an error naming it", err)
	}
}
