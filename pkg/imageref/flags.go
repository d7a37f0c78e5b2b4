package imageref

import (
	"fmt"
	"strings"
)

// IsDigestRef reports whether ref parses with ParseDigest.
func IsDigestRef(ref string) bool {
	_, err := ParseDigest(ref)
	return err == nil
}

// RequireDigestRef reports a missing --flag or one that is not a digest
// reference (ParseDigest): a tag could move between the check and its
// use. The error names the flag, the value and the rule.
func RequireDigestRef(flag, ref string) error {
	if ref == "" {
		return fmt.Errorf("--%s is required", flag)
	}
	if _, err := ParseDigest(ref); err != nil {
		if !strings.Contains(ref, "@") {
			return fmt.Errorf("--%s %q: want repository@sha256:<64 hex> (a tag could move)", flag, ref)
		}
		return fmt.Errorf("--%s %q: want repository@sha256:<64 hex>: %w", flag, ref, err)
	}
	return nil
}

// ValidRef reports an optional --flag whose value is not an image
// reference (Parse); empty is valid.
func ValidRef(flag, ref string) error {
	if ref == "" {
		return nil
	}
	if _, err := Parse(ref); err != nil {
		return fmt.Errorf("--%s %q: want an image reference (repository:tag or repository@sha256:<64 hex>): %w", flag, ref, err)
	}
	return nil
}

// ValidRepository reports an optional --flag whose value is not a
// repository name (ParseRepository); empty is valid.
func ValidRepository(flag, repo string) error {
	if repo == "" {
		return nil
	}
	if _, err := ParseRepository(repo); err != nil {
		return fmt.Errorf("--%s %q: want a repository without tag or digest, e.g. quay.io/org/os: %w", flag, repo, err)
	}
	return nil
}
