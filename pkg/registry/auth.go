package registry

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	helperclient "github.com/docker/docker-credential-helpers/client"
	"github.com/docker/docker-credential-helpers/credentials"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/pkg/docker/config"
	"go.podman.io/image/v5/types"
)

// Credentials are looked up the way podman, buildah and CRI-O look them up
// (containers/image's pkg/docker/config): repository-scoped "auths" keys
// longest prefix first ("quay.io/org/repo", then "quay.io/org", then
// "quay.io"), URL keys such as Docker Hub's "https://index.docker.io/v1/",
// per-registry "credHelpers", and the default files (auth.json under
// $XDG_RUNTIME_DIR and ~/.config/containers, then ~/.docker/config.json)
// when no file is named. The one addition is Docker's "credsStore", which
// containers/image does not read: Docker's own client uses it for every
// registry that has no other entry, and docker-login-made files rely on it.

// pullSecretFiles are the files a mounted Secret or ConfigMap may hold an
// auth file under: the key of a kubernetes.io/dockerconfigjson Secret, then
// Docker's file name.
var pullSecretFiles = []string{".dockerconfigjson", "config.json"}

// dockerHubKey is Docker Hub's key in a credsStore (Docker's IndexServer).
const dockerHubKey = "https://index.docker.io/v1/"

// authFile is what kiln checks in an auth file before handing it to
// containers/image (and buildah): the entries, the helpers and Docker's
// default store.
type authFile struct {
	Auths       map[string]authEntry `json:"auths"`
	CredHelpers map[string]string    `json:"credHelpers"`
	CredsStore  string               `json:"credsStore"`
}

type authEntry struct {
	Auth          string `json:"auth"`
	IdentityToken string `json:"identitytoken"`
	// Username and Password are written by `oc create secret
	// docker-registry` next to auth; containers/image ignores them.
	Username string `json:"username"`
	Password string `json:"password"`
}

// parseAuthFile checks an auth file. Its errors name the entry's key (a
// registry or repository, never a secret) and never quote the contents:
// a JSON syntax error would echo the character it stopped at.
func parseAuthFile(data []byte) (authFile, error) {
	var f authFile
	if err := json.Unmarshal(data, &f); err != nil {
		return authFile{}, describeJSONError(err, len(data))
	}
	for _, key := range slices.Sorted(maps.Keys(f.Auths)) {
		if err := checkEntry(key, f.Auths[key]); err != nil {
			return authFile{}, err
		}
	}
	for _, key := range slices.Sorted(maps.Keys(f.CredHelpers)) {
		if f.CredHelpers[key] == "" {
			return authFile{}, fmt.Errorf("credHelpers entry %q: empty helper name", key)
		}
	}
	return f, nil
}

// describeJSONError says where a file is broken without quoting it.
func describeJSONError(err error, size int) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se) && se.Offset >= int64(size):
		return errors.New("not a docker config.json: empty or truncated")
	case errors.As(err, &se):
		return fmt.Errorf("not a docker config.json: invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te) && te.Field != "":
		return fmt.Errorf("not a docker config.json: field %q is not a %s", te.Field, te.Type)
	}
	return errors.New("not a docker config.json: not a JSON object")
}

func checkEntry(key string, e authEntry) error {
	if key == "" {
		return errors.New("auths entry with an empty key")
	}
	if e.Auth == "" {
		if e.Username != "" || e.Password != "" {
			// The kubelet would accept it; podman, buildah and CRI-O
			// would pull anonymously. Say so instead.
			return fmt.Errorf("auths entry %q: username and password without auth (base64 of user:password), which containers/image ignores", key)
		}
		return nil // a credential helper's marker, as Docker writes them
	}
	dec, err := base64.StdEncoding.DecodeString(e.Auth)
	if err != nil {
		return fmt.Errorf("auths entry %q: auth is not base64", key)
	}
	if !bytes.ContainsRune(dec, ':') {
		return fmt.Errorf("auths entry %q: auth is not base64 of user:password", key)
	}
	return nil
}

// loadAuthFile reads and checks path. A missing file is an error only when
// required (a file the user named); the default files may be absent.
func loadAuthFile(path string, required bool) (authFile, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) && !required {
		return authFile{}, nil
	}
	if err != nil {
		return authFile{}, fmt.Errorf("reading registry credentials: %w", err)
	}
	f, err := parseAuthFile(data)
	if err != nil {
		return authFile{}, fmt.Errorf("reading registry credentials %s: %w", path, err)
	}
	return f, nil
}

// keychain resolves credentials with containers/image, then Docker's
// credsStore.
type keychain struct {
	// sys names the auth file; nil means containers/image's default files.
	sys *types.SystemContext
	// where names the file(s) in errors.
	where string
	// store is the credsStore of the Docker config file, "" if none.
	store string
}

// Keychain returns the credentials source: r.AuthFile, else the file named
// by $REGISTRY_AUTH_FILE (as podman reads it), else the default files.
func (r Remote) Keychain() (authn.Keychain, error) {
	path := r.AuthFile
	if path == "" {
		path = os.Getenv("REGISTRY_AUTH_FILE")
	}
	if path != "" {
		f, err := loadAuthFile(path, true)
		if err != nil {
			return nil, err
		}
		return keychain{sys: &types.SystemContext{AuthFilePath: path}, where: path, store: f.CredsStore}, nil
	}
	docker := dockerConfigPath()
	f, err := loadAuthFile(docker, false)
	if err != nil {
		return nil, err
	}
	return keychain{where: "the default auth files", store: f.CredsStore}, nil
}

// dockerConfigPath is where `docker login` keeps config.json (and so its
// credsStore).
func dockerConfigPath() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return filepath.Join(d, "config.json")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".docker", "config.json")
}

// Resolve returns the credentials for a repository (go-containerregistry
// passes a name.Repository for every registry call) or a whole registry.
func (k keychain) Resolve(res authn.Resource) (authn.Authenticator, error) {
	key := credentialKey(res)
	creds, err := k.lookup(key)
	if err != nil {
		return nil, fmt.Errorf("resolving credentials for %s from %s: %w", key, k.where, err)
	}
	if creds == (types.DockerAuthConfig{}) {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(authn.AuthConfig{
		Username: creds.Username, Password: creds.Password, IdentityToken: creds.IdentityToken,
	}), nil
}

// credentialKey is the containers/image lookup key of res: the full
// repository, or the registry, with Docker Hub named docker.io as podman
// names it (go-containerregistry says index.docker.io), so that
// "docker.io/org/repo" keys match.
func credentialKey(res authn.Resource) string {
	if repo, ok := res.(name.Repository); ok {
		if named, err := reference.ParseNormalizedNamed(repo.Name()); err == nil {
			return named.Name()
		}
		return repo.Name()
	}
	reg := res.RegistryStr()
	if reg == name.DefaultRegistry {
		return "docker.io"
	}
	return reg
}

func (k keychain) lookup(key string) (types.DockerAuthConfig, error) {
	creds, err := config.GetCredentials(k.sys, key)
	if err != nil || creds != (types.DockerAuthConfig{}) || k.store == "" {
		return creds, err
	}
	return fromCredsStore(k.store, storeKey(key))
}

// storeKey is the server Docker's client asks its credsStore about: the
// registry host, or Docker Hub's legacy URL.
func storeKey(key string) string {
	reg, _, _ := strings.Cut(key, "/")
	if reg == "docker.io" {
		return dockerHubKey
	}
	return reg
}

// fromCredsStore asks docker-credential-<store> for server's credentials;
// "not found" is no credentials, as in Docker's client.
func fromCredsStore(store, server string) (types.DockerAuthConfig, error) {
	c, err := helperclient.Get(helperclient.NewShellProgramFunc("docker-credential-"+store), server)
	if err != nil {
		if credentials.IsErrCredentialsNotFound(err) || credentials.IsErrCredentialsNotFoundMessage(err.Error()) {
			return types.DockerAuthConfig{}, nil
		}
		return types.DockerAuthConfig{}, fmt.Errorf("asking credsStore docker-credential-%s: %w", store, err)
	}
	if c.Username == "<token>" {
		return types.DockerAuthConfig{IdentityToken: c.Secret}, nil
	}
	return types.DockerAuthConfig{Username: c.Username, Password: c.Secret}, nil
}

// authFilePath turns --registry-auth-file into the file to read. Tasks pass
// $(workspaces.registry-auth.path)/config.json, and the workspace is often a
// Kubernetes pull secret whose only file is .dockerconfigjson: when the
// named file is missing (or names a folder), the folder's .dockerconfigjson
// or config.json is used. Tekton turns an unbound optional workspace's path
// into "", so "/config.json" missing at the root means no file at all.
// Otherwise the path is returned as it is, and reading it reports the
// missing file by name.
func authFilePath(p string) string {
	if p == "" {
		return ""
	}
	fi, err := os.Stat(p)
	dir := p
	switch {
	case err == nil && !fi.IsDir():
		return p
	case err != nil && !os.IsNotExist(err):
		return p
	case err != nil && filepath.Dir(p) == "/":
		return ""
	case err != nil:
		dir = filepath.Dir(p)
	}
	for _, f := range pullSecretFiles {
		candidate := filepath.Join(dir, f)
		if fi, err := os.Stat(candidate); err == nil && !fi.IsDir() {
			return candidate
		}
	}
	return p
}
