package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imageref"
)

// Remote says how to reach registries: credentials, plain-HTTP hosts,
// transport and retries. The zero value uses the default auth files (as
// podman does), verified TLS with the system roots, the proxy of the
// environment and DefaultBackoff.
type Remote struct {
	// AuthFile is a docker config.json (or containers auth.json); empty
	// means $REGISTRY_AUTH_FILE, else the default files (see Keychain).
	AuthFile string
	// Insecure lists host[:port] reached over plain HTTP or unverified TLS,
	// each on its own (see IsInsecure).
	Insecure []string
	// Transport replaces the per-registry transport (tests: counting,
	// custom CA): its TLS and proxy settings are used as they are, while
	// IsInsecure still picks plain HTTP in ParseRef.
	Transport http.RoundTripper
	// Backoff bounds retries of transient failures; zero means DefaultBackoff.
	Backoff remote.Backoff
	// Config holds mirrors and per-registry flags and CAs; nil means none.
	Config *Config

	session *session // see WithSession
}

// DefaultBackoff retries a transient failure 5 times over about 6 s.
var DefaultBackoff = remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 5}

// Sentinel errors callers (and tests) tell apart. Auth failures are never
// reported as "not found": a registry that hides a repository from an
// anonymous user answers 401, and saying "missing" would send the admin
// looking in the wrong place. All three are faults (exitcode.IsFault): an
// error that wraps one exits 1, never 3, even from a verification.
var (
	ErrAuth        = exitcode.NewFault("registry authentication failed")
	ErrNotFound    = exitcode.NewFault("image not found")
	ErrUnreachable = exitcode.NewFault("registry unreachable")
)

// ParseRef parses an image reference, over plain HTTP when its host is
// insecure (IsInsecure).
func (r Remote) ParseRef(s string) (name.Reference, error) {
	ref, err := name.ParseReference(s, name.StrictValidation)
	if err != nil {
		if ref, err = name.ParseReference(s); err != nil {
			return nil, fmt.Errorf("parsing image reference %q: %w", s, err)
		}
	}
	if r.IsInsecure(ref.Context().RegistryStr()) {
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
	if r.IsInsecure(repo.RegistryStr()) {
		return name.NewRepository(s, name.Insecure)
	}
	return repo, nil
}

// Options returns go-containerregistry options for one call.
func (r Remote) Options(ctx context.Context) ([]remote.Option, error) {
	kc, err := r.Keychain()
	if err != nil {
		return nil, err
	}
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(kc),
		remote.WithRetryBackoff(r.backoff()),
		remote.WithRetryPredicate(retryable),
		remote.WithUserAgent("kiln"),
	}
	return append(opts, remote.WithTransport(r.transport())), nil
}

// backoff is r.Backoff, or DefaultBackoff when unset.
func (r Remote) backoff() remote.Backoff {
	if r.Backoff.Steps == 0 {
		return DefaultBackoff
	}
	return r.Backoff
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

// RemoteFrom returns the registry settings of the flags. The auth file may
// be a mounted pull secret's folder (see authFilePath). The registries
// folder (--registries-config) is read here, before any network call, so
// an unreadable one fails the step at once, naming it; the "" Tekton makes
// of $(workspaces.registries.path) for an unbound optional workspace means
// none (see LoadDir).
func RemoteFrom(o RegistryOptions) (Remote, error) {
	if err := checkInsecureHosts(o.Insecure); err != nil {
		return Remote{}, err
	}
	cfg, err := LoadDir(o.ConfigDir)
	if err != nil {
		return Remote{}, fmt.Errorf("--registries-config %s: %w", o.ConfigDir, err)
	}
	return Remote{AuthFile: authFilePath(o.AuthFile), Insecure: o.Insecure, Config: cfg}, nil
}

// checkInsecureHosts refuses an --insecure-registry entry that is not a
// registry host[:port]: a step matches the entry against the host of each
// reference it reaches, so a URL or a path (http://host, host/ns) would
// match nothing and leave the registry on TLS without a word.
func checkInsecureHosts(hosts []string) error {
	var errs []error
	for _, h := range hosts {
		if _, err := imageref.ParseRegistry(h); err != nil {
			errs = append(errs, fmt.Errorf("--insecure-registry %q (or KILN_INSECURE_REGISTRY): want a registry host[:port], without scheme or path: %w", h, err))
		}
	}
	return exitcode.ValidationErrors(errs...)
}
