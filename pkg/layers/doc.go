// Package layers flattens an OCI image's layers the way a container
// runtime's overlay does: a later layer's entry replaces an earlier one at
// the same path, a whiteout (.wh.<name>) deletes <name> from the layers
// below, and an opaque whiteout (.wh..wh..opq) hides everything the layers
// below had in its folder while keeping what its own layer brings. See
// https://github.com/opencontainers/image-spec/blob/main/layer.md#whiteouts
//
// Every stage that reads an image's final filesystem walks it through
// Walk, so they agree on what the image holds.
package layers
