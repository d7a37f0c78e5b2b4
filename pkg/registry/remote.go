package registry

import (
	"path/filepath"

	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/kiln-dev/kiln/pkg/step"

	dockerconfig "github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/config/configfile"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Remote says how to reach registries: credentials, plain-HTTP hosts,
// transport and retries. The zero value uses the default keychain and
// transport with DefaultBackoff.
type Remote struct {
	// AuthFile is a docker config.json; empty means the default keychain.
	AuthFile string
	// Insecure lists host[:port] reached over plain HTTP.
	Insecure []string
	// Transport replaces http.DefaultTransport (tests: counting, custom CA).
	Transport http.RoundTripper
	// Backoff bounds retries of transient failures; zero means DefaultBackoff.
	Backoff remote.Backoff
	// Config holds mirrors and per-registry flags and CAs; nil means none.
	Config *Config
}

// DefaultBackoff retries a transient failure 5 times over about 6 s.
var DefaultBackoff = remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 5}

// Sentinel errors callers (and tests) tell apart. Auth failures are never
// reported as "not found": a registry that hides a repository from an
// anonymous user answers 401, and saying "missing" would send the admin
// looking in the wrong place.
var (
	ErrAuth        = errors.New("registry authentication failed")
	ErrNotFound    = errors.New("image not found")
	ErrUnreachable = errors.New("registry unreachable")
)

// ParseRef parses an image reference, over plain HTTP when its host is in
// Insecure.
func (r Remote) ParseRef(s string) (name.Reference, error) {
	ref, err := name.ParseReference(s, name.StrictValidation)
	if err != nil {
		if ref, err = name.ParseReference(s); err != nil {
			return nil, fmt.Errorf("parsing image reference %q: %w", s, err)
		}
	}
	if slices.Contains(r.Insecure, ref.Context().RegistryStr()) {
		return name.ParseReference(s, name.Insecure)
	}
	return ref, nil
}

// ParseRepo parses a repository name like ParseRef.
func (r Remote) ParseRepo(s string) (name.Repository, error) {
	repo, err := name.NewRepository(s)
	if err != nil {
		return name.Repository{}, fmt.Errorf("parsing repository %q: %w", s, err)
	}
	if slices.Contains(r.Insecure, repo.RegistryStr()) {
		return name.NewRepository(s, name.Insecure)
	}
	return repo, nil
}

// Keychain returns the credentials source.
func (r Remote) Keychain() (authn.Keychain, error) {
	if r.AuthFile == "" {
		return authn.DefaultKeychain, nil
	}
	f, err := os.Open(r.AuthFile)
	if err != nil {
		return nil, fmt.Errorf("reading registry credentials: %w", err)
	}
	defer f.Close()
	cf, err := dockerconfig.LoadFromReader(f)
	if err != nil {
		// The parse error could quote the file; name the file only.
		return nil, fmt.Errorf("reading registry credentials %s: not a docker config.json", r.AuthFile)
	}
	return fileKeychain{cf}, nil
}

// fileKeychain serves credentials from one docker config.json.
type fileKeychain struct{ cf *configfile.ConfigFile }

func (k fileKeychain) Resolve(res authn.Resource) (authn.Authenticator, error) {
	for _, key := range []string{res.RegistryStr(), "https://" + res.RegistryStr(), "http://" + res.RegistryStr()} {
		if ac, ok := k.cf.AuthConfigs[key]; ok {
			ac2, err := k.cf.GetAuthConfig(key)
			if err == nil {
				ac = ac2
			}
			return authn.FromConfig(authn.AuthConfig{
				Username: ac.Username, Password: ac.Password, Auth: ac.Auth,
				IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken,
			}), nil
		}
	}
	return authn.Anonymous, nil
}

// Options returns go-containerregistry options for one call.
func (r Remote) Options(ctx context.Context) ([]remote.Option, error) {
	kc, err := r.Keychain()
	if err != nil {
		return nil, err
	}
	b := r.Backoff
	if b.Steps == 0 {
		b = DefaultBackoff
	}
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(kc),
		remote.WithRetryBackoff(b),
		remote.WithRetryPredicate(retryable),
		remote.WithUserAgent("kiln"),
	}
	if r.Transport != nil {
		opts = append(opts, remote.WithTransport(r.Transport))
	}
	return opts, nil
}

// retryable adds a refused connection to go-containerregistry's transient
// errors: a registry that is restarting refuses for a moment.
func retryable(err error) bool {
	var te *transport.Error
	if errors.As(err, &te) {
		return te.Temporary()
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || isTimeout(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Classify turns a registry error into one that says what went wrong with
// which image: ErrAuth, ErrNotFound or ErrUnreachable wrapped with the
// reference and the cause. Other errors are wrapped as they are.
func Classify(err error, verb, ref string) error {
	if err == nil {
		return nil
	}
	var te *transport.Error
	if errors.As(err, &te) {
		switch {
		case te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden || hasCode(te, transport.UnauthorizedErrorCode, transport.DeniedErrorCode):
			return fmt.Errorf("%s %s: %w (HTTP %d; check the credentials in --registry-auth-file): %v", verb, ref, ErrAuth, te.StatusCode, err)
		case te.StatusCode == http.StatusNotFound || hasCode(te, transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode):
			return fmt.Errorf("%s %s: %w: %v", verb, ref, ErrNotFound, err)
		}
		return fmt.Errorf("%s %s: %w", verb, ref, err)
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) || errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%s %s: %w after retries with backoff: %v", verb, ref, ErrUnreachable, err)
	}
	return fmt.Errorf("%s %s: %w", verb, ref, err)
}

func hasCode(te *transport.Error, codes ...transport.ErrorCode) bool {
	for _, d := range te.Errors {
		if slices.Contains(codes, d.Code) {
			return true
		}
	}
	return false
}

// RemoteFrom returns the registry settings of the flags.
//
// Tekton turns $(workspaces.X.path) of an unbound optional workspace into
// "", so a Task's --registry-auth-file=$(workspaces.registry-auth.path)/config.json
// becomes "/config.json": a file at the root that does not exist means "no
// credentials workspace", and the default keychain is used.
func RemoteFrom(o step.RegistryOptions) Remote {
	auth := o.AuthFile
	if filepath.Dir(auth) == "/" {
		if _, err := os.Stat(auth); os.IsNotExist(err) {
			auth = ""
		}
	}
	return Remote{AuthFile: auth, Insecure: o.Insecure}
}
