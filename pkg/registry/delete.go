package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// Listing and deleting are for what kiln pushed itself, so, like
// HeadNamed, they go to the named registry only, never to a mirror.

// ErrDeleteRefused says a registry does not allow deleting manifests:
// the distribution spec lets it answer 405 or UNSUPPORTED
// (https://github.com/opencontainers/distribution-spec/blob/main/spec.md#deleting-manifests);
// docker-registry does until REGISTRY_STORAGE_DELETE_ENABLED is set.
var ErrDeleteRefused = exitcode.NewFault("the registry refuses to delete manifests")

// GetNamed reads ref's descriptor, manifest included, from ref's own
// registry, like HeadNamed.
func (r Remote) GetNamed(ctx context.Context, ref name.Reference) (*Descriptor, error) {
	return named(ctx, r, ref, remote.Get)
}

// ListTags lists the tags of repo (the registry's tags/list, every page).
func (r Remote) ListTags(ctx context.Context, repo name.Repository) ([]string, error) {
	opts, err := r.Options(ctx)
	if err != nil {
		return nil, err
	}
	tags, err := remote.List(repo, opts...)
	if err != nil {
		return nil, Classify(err, "listing the tags of", repo.String())
	}
	return tags, nil
}

// Delete deletes the manifest ref names (by digest: the distribution
// spec's DELETE /v2/<name>/manifests/<digest>). A registry that does not
// allow it gives an error wrapping ErrDeleteRefused and naming the
// registry; one that no longer has the manifest, ErrNotFound.
func (r Remote) Delete(ctx context.Context, ref name.Reference) error {
	opts, err := r.Options(ctx)
	if err != nil {
		return err
	}
	err = remote.Delete(ref, opts...)
	if refused(err) {
		return fmt.Errorf("deleting %s: %w (registry %s; enable deletes there, e.g. REGISTRY_STORAGE_DELETE_ENABLED=true for docker-registry): %v",
			ref, ErrDeleteRefused, ref.Context().RegistryStr(), err)
	}
	return Classify(err, "deleting", ref.String())
}

// refused reports a registry's "deletes are not allowed" answer.
func refused(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	return te.StatusCode == http.StatusMethodNotAllowed || hasCode(te, transport.UnsupportedErrorCode)
}
