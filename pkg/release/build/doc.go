// Package build makes kiln's two images from a checkout, reproducibly,
// for pkg/release (make images, make release) and the tests' clusters
// (test/env). It depends on go-containerregistry only, so that test/env,
// which the tests of kiln's other packages import, can use it.
//
// Both images are ko-style (https://ko.build/): the binary at
// /ko-app/<name> as the entrypoint. kiln-trigger has no base and runs as
// 65532 (config/'s Deployment sets runAsNonRoot); kiln-steps is laid on
// hack/stepsbase.sh's Debian rootfs, which has the buildah CLI the
// buildah paths call, and runs as root, with kiln-image-build beside it
// in /ko-app (the image-build Task's command: that stage alone, which
// starts faster). No layer or config carries a
// timestamp, the binaries are built with -trimpath, and the base tarball
// is used as it is, so one checkout and one base give one digest.
package build
