package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/pkg/work"
)

func newKmodBuildCommand(env base.LookupEnv) *cobra.Command {
	o := kmod.DefaultBuildOptions()
	return base.NewStage(base.Stage{
		Name:  work.StageKmodBuild,
		Short: "Build the day-0 kernel-module image (ModuleDay0 build)",
		Long: `Builds the pool's day-0 kernel-module image (KMM ModuleDay0, the day-0 proposal): the Dockerfile of
spec.osMapping.build runs as a buildah build with OS_AUTO, DTK_AUTO, KERNEL_VERSION,
KERNEL_FULL_VERSION and MOD_NAME; build secrets are buildah secrets read from --build-secrets-dir.
The image is pushed (to containerImage, or to the unsigned image when kmod-sign follows); kmod-attest,
the Task's next step, signs and attests it. This step runs the user's Dockerfile and holds no
signing key: an image already at the target is reused only when kiln's identity (--public-key)
attested exactly these inputs. Only the Secrets the ModuleDay0 lists reach the build, each a
Secret name by the apiserver's rules and each file inside its Secret's folder.

Reads:   work/render/moduleday0.json, the payload (cluster, or --os-image/--dtk-image)
Writes:  work/kmod/build.json
Results: KMOD_IMAGE_URL, KMOD_IMAGE_DIGEST (unsigned when kmod-sign follows), REUSED, REUSE_REJECTED`,
		Example: `  kiln-steps kmod-build --pool infra --source dir:examples/cluster --work /tmp/work --results-dir /tmp/results \
    --os-image quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:<digest> --public-key keys/cosign.pub`,
		Runner: o,
		Bind: func(fs *pflag.FlagSet) {
			base.BindOptions(fs, env, &o.Options, true)
			bindKube(fs, &o.KubeOptions)
			base.BindRegistry(fs, env, &o.RegistryOptions)
			fs.StringVar(&o.OSImage, "os-image", o.OSImage, "OS_AUTO: the payload's rhel-coreos image (default: ConfigMap machine-config-osimageurl)")
			fs.StringVar(&o.DTKImage, "dtk-image", o.DTKImage, "DTK_AUTO: the payload's driver-toolkit image (default: the driver-toolkit tag of ClusterVersion status.desired.image)")
			fs.BoolVar(&o.Rebuild, "rebuild", o.Rebuild, "build even when containerImage exists (a cluster upgrade to a new kernel; set by the trigger)")
			fs.StringVar(&o.TargetRelease, "target-release", o.TargetRelease, "the release an upgrade-ahead run prepares: push to the build target's tag for the target kernel and these inputs (<tag>-<kernel>-<inputs>), never its own tag (set by the trigger)")
			fs.StringVar(&o.SecretsDir, "build-secrets-dir", o.SecretsDir, "folder with one sub-folder per build.secrets Secret")
			fs.StringVar(&o.Buildah.Bin, "buildah", o.Buildah.Bin, "buildah binary")
			base.BindIdentity(fs, &o.Identity)
		},
	})
}

func newKmodAttestCommand(env base.LookupEnv) *cobra.Command {
	o := kmod.DefaultAttestOptions()
	return base.NewStage(base.Stage{
		Name:  "kmod-attest",
		Cause: work.StageKmodBuild,
		Short: "Sign and attest the kmod image kmod-build pushed",
		Long: `Signs the kernel-module image kmod-build pushed and attests its build inputs (the Dockerfile,
build arguments, OS and driver-toolkit digests, kernel and secret names) with kiln's cosign key
(--key). It is the kmod-build Task's second step: the only one that mounts the key, and it runs
no user code. The image must be in the ModuleDay0's build target repository, by digest, with
inputs of this ModuleDay0; an image kmod-build reused is already attested and left alone.

Reads:   work/render/moduleday0.json, work/kmod/build.json
Writes:  the ModuleDay0's status (with --source dir:, the ModuleDay0 with that status in
         work/kmod/manifests/moduleday0s/<namespace>_<name>.yaml)`,
		Example: `  kiln-steps kmod-attest --pool infra --source dir:examples/cluster --work /tmp/work --key keys/cosign.key`,
		Runner:  o,
		Bind: func(fs *pflag.FlagSet) {
			base.BindOptions(fs, env, &o.Options, true)
			bindKube(fs, &o.KubeOptions)
			base.BindRegistry(fs, env, &o.RegistryOptions)
			fs.BoolVar(&o.Rebuild, "rebuild", o.Rebuild, "the value kmod-build was given (the same build target)")
			fs.StringVar(&o.TargetRelease, "target-release", o.TargetRelease, "the value kmod-build was given: an upgrade-ahead image is not recorded in the ModuleDay0's status")
			bindAttest(fs, env, &o.Attest)
		},
	})
}

func newKmodSignCommand(env base.LookupEnv) *cobra.Command {
	o := kmod.DefaultSignOptions()
	return base.NewStage(base.Stage{
		Name:  work.StageKmodSign,
		Short: "Sign the kernel modules in the kmod image (ModuleDay0 sign)",
		Long: `Signs the day-0 kernel modules (KMM ModuleDay0 sign) in kmod-build's image, or in
spec.osMapping.sign.unsignedImage when kmod-build did not run, with the module signing key and
certificate (--module-key, --module-cert: sign.keySecret and sign.certSecret). The signed modules
are pushed as one layer to spec.osMapping.containerImage, which is then signed and attested with
kiln's cosign key (--key). An image already there is reused only when kiln's identity attested these
inputs and every module carries a signature by the current certificate.

Reads:   work/render/moduleday0.json, work/kmod/build.json (when kmod-build ran)
Writes:  work/kmod/sign.json; the ModuleDay0's status (with --source dir:, the ModuleDay0 with that
         status in work/kmod/manifests/moduleday0s/<namespace>_<name>.yaml)
Results: KMOD_IMAGE_URL, KMOD_IMAGE_DIGEST (signed modules), REUSED, REUSE_REJECTED`,
		Example: `  kiln-steps kmod-sign --pool infra --source dir:examples/cluster --work /tmp/work --results-dir /tmp/results \
    --module-cert keys/kmod.crt --module-key keys/kmod.key --key keys/cosign.key --public-key keys/cosign.pub`,
		Runner: o,
		Bind: func(fs *pflag.FlagSet) {
			base.BindOptions(fs, env, &o.Options, true)
			bindKube(fs, &o.KubeOptions)
			base.BindRegistry(fs, env, &o.RegistryOptions)
			fs.StringVar(&o.CertFile, "module-cert", o.CertFile, `kernel-module signing certificate (sign.certSecret, key "cert")`)
			fs.StringVar(&o.KeyFile, "module-key", o.KeyFile, `kernel-module signing key (sign.keySecret, key "key")`)
			fs.StringVar(&o.Hash, "hash", o.Hash, "module signature hash: sha256, sha384 or sha512")
			fs.BoolVar(&o.Rebuild, "rebuild", o.Rebuild, "sign even when containerImage exists (a cluster upgrade to a new kernel; set by the trigger)")
			fs.StringVar(&o.TargetRelease, "target-release", o.TargetRelease, "the release an upgrade-ahead run prepares: push to containerImage's tag for the target kernel and these inputs (<tag>-<kernel>-<inputs>), never containerImage's own tag (set by the trigger)")
			base.BindIdentity(fs, &o.Identity)
			bindAttest(fs, env, &o.Attest)
		},
	})
}
