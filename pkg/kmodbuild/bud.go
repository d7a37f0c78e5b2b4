package kmodbuild

import (
	"os"
	"path/filepath"

	"github.com/kiln-dev/kiln/pkg/buildah"
)

// Build arguments kiln passes (KMM's names, from the day-0 proposal).
const (
	ArgOSAuto            = "OS_AUTO"
	ArgDTKAuto           = "DTK_AUTO"
	ArgKernelVersion     = "KERNEL_VERSION"
	ArgKernelFullVersion = "KERNEL_FULL_VERSION"
	ArgModName           = "MOD_NAME"
)

// KernelLabel is the label kmod-build puts on the unsigned image: the
// kernel it built the modules for (KERNEL_FULL_VERSION). It differs from
// ostree.linux, the base's kernel, when the pool boots another kernel
// (kernelType realtime).
const KernelLabel = "kiln.dev/kernel-full-version"

// BuildEnv is the environment of a kmod build's final stage (buildah
// --env: an undeclared --build-arg would not reach its RUN steps, such as
// the day-0 proposal's depmod). Tools that write times, users or hosts into their
// output read these; the variables also land in the image config's Env.
//
// buildah 1.28 gives --env to the final stage only, not to the stage that
// compiles the module (imagebuild TestBudEnvReachesTheFinalStage). The module
// does not need them: the kernel's build refuses __DATE__ and __TIME__
// (-Werror=date-time), so SOURCE_DATE_EPOCH cannot reach it; KBUILD_BUILD_*
// only feed vmlinux's compile.h, which an external module (make M=…)
// never builds; its build id is a hash of its content. A user's own tools
// in a builder stage that embed the time are not covered.
//
// No -ffile-prefix-map: the module is compiled inside the build container,
// in the Dockerfile's WORKDIR against the driver toolkit's headers (the
// kernel's Makefile already maps its own tree away with
// -fmacro-prefix-map), so the paths in its debug info are container paths,
// the same on every machine; no path of the host reaches the module
// (TestRebuildUnsignedAndResignGiveThePushedDigests checks).
var BuildEnv = map[string]string{
	"SOURCE_DATE_EPOCH":      "0",
	"KBUILD_BUILD_TIMESTAMP": "Thu Jan  1 00:00:00 UTC 1970",
	"KBUILD_BUILD_USER":      "kiln",
	"KBUILD_BUILD_HOST":      "kiln",
}

// UnsignedBud writes the Dockerfile into dir and returns the buildah
// build of the unsigned image: kmod-build and RebuildUnsigned run the
// same. Every byte of the result comes from these arguments: the pool is
// not among them (the image belongs to the ModuleDay0, which may serve
// several pools), so it is no label either.
func UnsignedBud(dir, dockerfile string, args, secrets map[string]string, target, kernel string) (buildah.Bud, error) {
	cf := filepath.Join(dir, "Dockerfile")
	if err := os.WriteFile(cf, []byte(dockerfile), 0o644); err != nil {
		return buildah.Bud{}, err
	}
	return buildah.Bud{
		Dir: dir, Containerfile: cf, BuildArgs: args, Secrets: secrets, Target: target, Env: BuildEnv,
		Labels: map[string]string{KernelLabel: kernel},
		Pulls:  []string{args[ArgOSAuto], args[ArgDTKAuto]},
		Bases:  []string{args[ArgOSAuto], args[ArgDTKAuto]},
	}, nil
}
