// Package osimage is the image-build stage (`kiln-steps image-build`): it
// reads the rendered config from the workspace, makes a kmod image the
// stages left there the base, checks a custom base, builds or reuses the
// layered OS image with pkg/imagebuild, and writes the step's results and
// report.
//
// Preflight checks a custom base against the payload's base: same leading
// layers, same OS version label; a failure is an error.
//
// Only cmd/ and end-to-end tests import this package; other stages use
// pkg/imagebuild.
package osimage
