package payload

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// ResolveOptions say how to reach registries.
type ResolveOptions struct {
	// Insecure lists registries (host[:port]) reached over plain HTTP.
	Insecure []string
	// Keychain finds credentials; nil means the default keychain.
	Keychain authn.Keychain
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
	desc, err := remote.Head(parsed, remote.WithContext(ctx), remote.WithAuthFromKeychain(kc))
	if err != nil {
		return "", fmt.Errorf("resolving image %q: %w", ref, err)
	}
	return parsed.Context().Digest(desc.Digest.String()).String(), nil
}
