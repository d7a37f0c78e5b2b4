// Package imageref parses image references the way both kiln's registry
// client and the node's container runtime do, so that a malformed
// reference is refused where it is given (a flag, a ConfigMap key, a
// custom resource field) and not later, halfway through a run.
//
// An image reference is accepted when two libraries accept it:
// go-containerregistry's name package, which every registry call of kiln
// goes through (pkg/registry), and the distribution reference grammar of
// containers/image, which CRI-O applies on the node. name checks only
// the characters of a repository, so "quay.io//os" or "quay.io/os/"
// parse there and fail only later, on the node or in a policy check; the
// grammar refuses them at once.
//
// Both are field libraries:
// https://pkg.go.dev/github.com/google/go-containerregistry/pkg/name and
// https://pkg.go.dev/go.podman.io/image/v5/docker/reference.
package imageref

import (
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"go.podman.io/image/v5/docker/reference"
)

// ErrTagWithDigest says a reference names both a tag and a digest:
// go-containerregistry drops the tag, but containers/image (and so CRI-O)
// refuses such a reference.
var ErrTagWithDigest = errors.New("a reference with both a tag and a digest: drop the tag")

// ParseDigest parses ref as registry/repository@sha256:<64 hex>, an
// image reference that cannot move, with name's strict validation: the
// registry is explicit (a node pulls exactly what it names, with no
// docker.io default), and no tag stands next to the digest.
func ParseDigest(ref string) (name.Digest, error) {
	d, err := name.NewDigest(ref, name.StrictValidation)
	if err != nil {
		return name.Digest{}, err
	}
	r, err := reference.Parse(ref)
	if err != nil {
		return name.Digest{}, err
	}
	if _, tagged := r.(reference.Tagged); tagged {
		return name.Digest{}, ErrTagWithDigest
	}
	return d, nil
}

// Parse parses an image reference by tag or digest; a short name
// (busybox, on docker.io) is accepted as both libraries accept it.
func Parse(ref string) (name.Reference, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	if _, err := reference.ParseNormalizedNamed(ref); err != nil {
		return nil, err
	}
	return r, nil
}

// ParseStrict parses a fully qualified image reference: registry and tag
// or digest spelled out (name.StrictValidation), as MCO and the release
// payload write them.
func ParseStrict(ref string) (name.Reference, error) {
	r, err := name.ParseReference(ref, name.StrictValidation)
	if err != nil {
		return nil, err
	}
	if _, err := reference.ParseNamed(ref); err != nil {
		return nil, err
	}
	return r, nil
}

// ParseRepository parses a repository name: no tag, no digest.
func ParseRepository(repo string) (name.Repository, error) {
	r, err := name.NewRepository(repo)
	if err != nil {
		return name.Repository{}, err
	}
	n, err := reference.ParseNormalizedNamed(repo)
	if err != nil {
		return name.Repository{}, err
	}
	if !reference.IsNameOnly(n) {
		return name.Repository{}, errors.New("a repository carries no tag or digest")
	}
	return r, nil
}

// ParseRegistry parses a registry host[:port], as given to reach an
// embedded or insecure registry: what both libraries read as the domain
// of host/x.
func ParseRegistry(host string) (name.Registry, error) {
	r, err := name.NewRegistry(host, name.StrictValidation)
	if err != nil {
		return name.Registry{}, err
	}
	n, err := reference.ParseNamed(host + "/x")
	if err != nil {
		return name.Registry{}, err
	}
	if reference.Domain(n) != host {
		return name.Registry{}, fmt.Errorf("%q is not a registry host[:port]", host)
	}
	return r, nil
}
