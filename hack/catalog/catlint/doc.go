// Package catlint checks a Tekton catalog directory for what tektoncd/catlin
// checks before a resource enters tektoncd/catalog, with Tekton's own
// packages: each file is decoded strictly with Tekton's scheme, defaulted
// and validated as the admission webhook would; then its place in the
// TEP-0003 layout, the label and annotations Tekton Hub reads (categories
// from Hub's own list), a description on every param, result and
// workspace, step images that resolve to a pinned reference once param
// defaults are applied, no Secret in an environment variable, and
// shellcheck on every script. catlin cannot be installed here (the module
// proxy refuses it); this package was written from reading what it checks,
// and is stricter where catlin only recommends: a missing display name,
// tags or platforms, an image without a digest, and a Secret in the
// environment are errors.
package catlint
