package registry

import (
	"errors"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// HTTPStatus returns the HTTP status of the registry response err carries,
// if any, so callers tell a failing registry (5xx, 429) apart from an
// answer about the image without importing go-containerregistry's
// transport.
func HTTPStatus(err error) (int, bool) {
	var te *transport.Error
	if errors.As(err, &te) {
		return te.StatusCode, true
	}
	return 0, false
}
