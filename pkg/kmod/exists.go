package kmod

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// RemoteExists returns an ImageChecker that asks the registry for the
// manifest. Only "not found" means absent; an auth or network failure is
// an error, so a missing credential is never mistaken for a missing image.
func RemoteExists(opts ...name.Option) ImageChecker {
	return func(ctx context.Context, ref string) (bool, error) {
		r, err := name.ParseReference(ref, opts...)
		if err != nil {
			return false, fmt.Errorf("parsing image reference %q: %w", ref, err)
		}
		_, err = remote.Head(r, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
		var terr *transport.Error
		switch {
		case err == nil:
			return true, nil
		case errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound:
			return false, nil
		default:
			return false, err
		}
	}
}
