package step

import (
	"fmt"
	"regexp"
)

// digestRef is repository@sha256:<64 hex>: an image reference that cannot
// move. It is checked on the string, before any registry is asked.
var digestRef = regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`)

// IsDigestRef reports whether ref is repository@sha256:<64 hex>.
func IsDigestRef(ref string) bool { return digestRef.MatchString(ref) }

// RequireDigestRef reports a missing --flag or one that is not a digest
// reference (a tag could move between the check and its use).
func RequireDigestRef(flag, ref string) error {
	switch {
	case ref == "":
		return fmt.Errorf("--%s is required", flag)
	case !digestRef.MatchString(ref):
		return fmt.Errorf("--%s %q: want repository@sha256:<64 hex> (a tag could move)", flag, ref)
	}
	return nil
}
