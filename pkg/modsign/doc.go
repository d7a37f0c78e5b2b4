// Package modsign signs kernel modules and the images that carry them:
// the kernel's module signature format (what scripts/sign-file appends),
// the check that a module was signed by a given certificate, filesToSign
// expansion, and SignImage, which signs a kmod image's modules and places
// them where the booted kernel loads them (usr/lib/modules/<kver>/extra,
// depmod run on the image's own kernel tree). Resign puts back the
// signatures of an earlier signed image onto a rebuilt unsigned one, so a
// reproduction needs no key.
//
// It is a library: the kmod stage (pkg/kmod), reproduce and tests import
// it, and it must import no stage package. It still uses osimage's
// LayerTypeFor and Rebuilt, which issue 33 moves to a library package.
package modsign
