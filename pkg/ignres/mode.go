package ignres

import (
	"fmt"
	"os"
)

// CheckFileMode is MCO's rule for a storage.files mode (ValidateIgnition,
// https://github.com/openshift/machine-config-operator/blob/master/pkg/controller/common/helpers.go):
// no setuid, setgid or sticky bit. render refuses a config that breaks it;
// image-build applies it again to the rendered config it reads, which may
// have been edited since.
func CheckFileMode(mode *int) error {
	if mode != nil && (*mode < 0 || os.FileMode(*mode) > os.ModePerm) { //nolint:gosec // checked non-negative
		return fmt.Errorf("mode %#o exceeds %#o: setuid, setgid and sticky bits are not allowed", *mode, os.ModePerm)
	}
	return nil
}
