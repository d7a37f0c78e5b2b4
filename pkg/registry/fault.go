package registry

import (
	"errors"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// go-containerregistry's transport.Error is a fault (exitcode.IsFault) when
// its status says the registry gave no answer about the image (401, 403,
// 404, 408, 429, 5xx). pkg/step cannot know the type itself: only this
// package may import the transport (boundary_test.go).
func init() { exitcode.RegisterFault(isTransportFault) }

func isTransportFault(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && exitcode.FaultStatus(te.StatusCode)
}
