package moduleday0

import (
	"context"
	"errors"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// RemoteExists returns an ImageChecker that asks r's registry for the
// manifest. The image is kiln's own output (spec.osMapping.containerImage),
// so it is looked for where kiln pushes it, not on a mirror. Only "not
// found" means absent; an auth or network failure is an error, so a
// missing credential is never mistaken for a missing image.
func RemoteExists(r registry.Remote) ImageChecker {
	return func(ctx context.Context, ref string) (bool, error) {
		parsed, err := r.ParseRef(ref)
		if err != nil {
			return false, err
		}
		_, err = r.HeadNamed(ctx, parsed)
		if err == nil {
			return true, nil
		}
		if err = registry.Classify(err, "looking for", ref); errors.Is(err, registry.ErrNotFound) {
			return false, nil
		}
		return false, err
	}
}
