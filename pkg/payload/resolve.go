package payload

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// ResolveOptions say how to reach registries.
type ResolveOptions struct {
	// Insecure lists registries (host[:port]) reached over plain HTTP.
	Insecure []string
	// Keychain finds credentials; nil means the default keychain.
	Keychain authn.Keychain
	// Config holds the cluster's mirrors: reads go to its mirrors first,
	// as the nodes' CRI-O pulls; nil means none.
	Config *registry.Config
}

// Resolve returns ref pinned by digest (repo@sha256:…). A reference that
// already has a digest is returned as given without contacting the
// registry. Render never calls this (it records references as given); the
// image stages do.
func Resolve(ctx context.Context, ref string, o ResolveOptions) (string, error) {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("resolving image %q: %w", ref, err)
	}
	if d, ok := parsed.(name.Digest); ok {
		return d.String(), nil
	}
	var opts []name.Option
	if slices.Contains(o.Insecure, parsed.Context().RegistryStr()) {
		opts = append(opts, name.Insecure)
		if parsed, err = name.ParseReference(ref, opts...); err != nil {
			return "", fmt.Errorf("resolving image %q: %w", ref, err)
		}
	}
	kc := o.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	desc, err := viaMirrors(o, parsed, func(r name.Reference) (*v1.Descriptor, error) {
		return remote.Head(r, remote.WithContext(ctx), remote.WithAuthFromKeychain(kc))
	})
	if err != nil {
		return "", fmt.Errorf("resolving image %q: %w", ref, err)
	}
	// Pinned in the source's repository, whichever mirror answered: the
	// digest is the same everywhere, and a mirror is not an input.
	return parsed.Context().Digest(desc.Digest.String()).String(), nil
}

// viaMirrors calls get for each place o.Config says ref may be pulled
// from, in order, and returns the first success.
func viaMirrors[T any](o ResolveOptions, ref name.Reference, get func(name.Reference) (T, error)) (T, error) {
	var zero T
	sources := []registry.Source{{Ref: ref}}
	if o.Config != nil {
		var err error
		if sources, err = o.Config.PullSources(ref); err != nil {
			return zero, fmt.Errorf("resolving mirrors of %s: %w", ref, err)
		}
	}
	var errs []error
	for _, s := range sources {
		v, err := get(s.Ref)
		if err == nil {
			return v, nil
		}
		errs = append(errs, err)
	}
	return zero, errors.Join(errs...)
}
