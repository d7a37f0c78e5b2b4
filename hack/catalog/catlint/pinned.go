package catlint

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kiln-dev/kiln/pkg/catalog"
	"github.com/kiln-dev/kiln/pkg/release/build"
)

// StepsImageParam is the param every kiln Task (and Pipeline) takes the
// kiln-steps image from.
const StepsImageParam = "kiln-image"

// StepsRepository is where kiln's release publishes kiln-steps.
const StepsRepository = "ghcr.io/kiln-dev/kiln-steps"

// ReleasePlatforms are the platforms make release builds the steps image
// for; a resource claims no other (tekton.dev/platforms).
var ReleasePlatforms = []string{"linux/amd64"}

// PinnedStepsRE is the only accepted steps image default: the release's
// tag, v<major>.<minor>.<patch>, and its digest (make release).
var PinnedStepsRE = regexp.MustCompile(`^` + regexp.QuoteMeta(StepsRepository) + `:v([0-9]+\.[0-9]+)\.[0-9]+@sha256:[0-9a-f]{64}$`)

// StepsImageDefault is the resource's kiln-image param default, "" when it
// has none.
func StepsImageDefault(r *Resource) string {
	if r.Task != nil {
		for _, p := range r.Task.Spec.Params {
			if p.Name == StepsImageParam && p.Default != nil {
				return p.Default.StringVal
			}
		}
		return ""
	}
	for _, p := range r.Pipeline.Spec.Params {
		if p.Name == StepsImageParam && p.Default != nil {
			return p.Default.StringVal
		}
	}
	return ""
}

// CheckPinned checks the steps image defaults of a set of resources: each
// Task has one, each present one is pinned by digest, its tag's
// <major>.<minor> is the resource's app.kubernetes.io/version, and all
// name the same image.
func CheckPinned(rs []*Resource) []error {
	var errs []error
	first, firstBy := "", ""
	for _, r := range rs {
		ref := StepsImageDefault(r)
		if ref == "" {
			if r.Task != nil {
				errs = append(errs, fmt.Errorf("%s: no %s param with a default", r.Ref(), StepsImageParam))
			}
			continue
		}
		m := PinnedStepsRE.FindStringSubmatch(ref)
		switch {
		case m == nil:
			errs = append(errs, fmt.Errorf("%s: params[%s] default %q is not %s:v<version>.<patch>@sha256:<64 hex> (run make release)", r.Ref(), StepsImageParam, ref, StepsRepository))
			continue
		case m[1] != r.Meta().Labels[catalog.LabelVersion]:
			errs = append(errs, fmt.Errorf("%s: params[%s] default %q: tag v%s.* but %s is %q", r.Ref(), StepsImageParam, ref, m[1], catalog.LabelVersion, r.Meta().Labels[catalog.LabelVersion]))
		}
		for _, p := range split(r.Meta().Annotations[catalog.AnnotationPlatforms], ", ") {
			if !slices.Contains(ReleasePlatforms, p) {
				errs = append(errs, fmt.Errorf("%s: %s lists %s, but the release image is built for %s only", r.Ref(), catalog.AnnotationPlatforms, p, strings.Join(ReleasePlatforms, ", ")))
			}
		}
		if first == "" {
			first, firstBy = ref, r.Ref()
		} else if ref != first {
			errs = append(errs, fmt.Errorf("%s: params[%s] default %q differs from %q in %s", r.Ref(), StepsImageParam, ref, first, firstBy))
		}
	}
	return errs
}

// ShellVar reads NAME=value from a shell file of plain assignments, such as
// hack/versions.sh.
func ShellVar(file, name string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", file, err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), name+"="); ok {
			return strings.Trim(v, `"'`), nil
		}
	}
	if err := s.Err(); err != nil {
		return "", fmt.Errorf("reading %s: %w", file, err)
	}
	return "", fmt.Errorf("%s: no %s=", file, name)
}

// StepsBase is the steps base tarball hack/stepsbase.sh caches for
// hack/versions.sh's STEPSBASE_SUITE and STEPSBASE_RECIPE, under
// $KILN_CACHE (default ~/.cache/kiln), as pkg/release/build names it.
func StepsBase(root string) (string, error) {
	versions := filepath.Join(root, "hack", "versions.sh")
	suite, err := ShellVar(versions, "STEPSBASE_SUITE")
	if err != nil {
		return "", err
	}
	recipe, err := ShellVar(versions, "STEPSBASE_RECIPE")
	if err != nil {
		return "", err
	}
	cache := os.Getenv("KILN_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locating the kiln cache: %w", err)
		}
		cache = filepath.Join(home, ".cache", "kiln")
	}
	return build.StepsBasePath(cache, suite, recipe), nil
}
