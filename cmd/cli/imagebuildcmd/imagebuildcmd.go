package imagebuildcmd

import (
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/osimage"
	"github.com/kiln-dev/kiln/pkg/work"
)

// Name is the standalone binary's name.
const Name = "kiln-image-build"

// NewRoot returns kiln-image-build's command tree: the image-build stage
// as the root command, with the flags, version and help of kiln-steps
// image-build, environment defaults read from the process environment.
func NewRoot() *cobra.Command { return NewRootEnv(os.LookupEnv) }

// NewRootEnv is NewRoot with environment defaults read from env: the
// command reference and the Task checks use no environment.
func NewRootEnv(env base.LookupEnv) *cobra.Command {
	root := New(env)
	root.Use = Name + " [flags]"
	// The same example, as this binary is called.
	root.Example = strings.ReplaceAll(root.Example, "kiln-steps "+work.StageImageBuild, Name)
	base.BindGlobal(root, env)
	base.SetupRoot(root)
	return root
}

// New returns the image-build stage command; kiln-steps adds it as its
// image-build subcommand.
func New(env base.LookupEnv) *cobra.Command {
	o := osimage.DefaultBuildOptions()
	return base.NewStage(base.Stage{
		Name:  work.StageImageBuild,
		Short: "Build the layered OS image on the base image",
		Long: `Builds the pool's layered OS image: the rendered config's files, units and enablement links become
one reproducible layer appended to --base (base blobs are mounted, and read once by the node
import check that runs over the whole image before any push); a user
Containerfile (--containerfile) or extensions select the buildah path. The image at the fingerprint
tag (kiln-<fingerprint>) is reused only when kiln's identity (--public-key, or the keyless
--certificate-* flags) signed it and attested exactly this build's inputs; anything else is rebuilt.

Reads:   work/render/rendered.json, work/kmod/ (the kmod image, when one was built)
Writes:  work/image/build.json
Results: IMAGE_URL, IMAGE_DIGEST, REUSED, REUSE_REJECTED, BASE_IMAGE_ARTIFACT_INPUTS`,
		Example: `  kiln-steps image-build --pool worker --work /tmp/work --results-dir /tmp/results \
    --base quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:<digest> \
    --repository registry.example.com/os --public-key keys/cosign.pub`,
		Runner: o,
		Bind: func(fs *pflag.FlagSet) {
			base.BindOptions(fs, env, &o.Options, true)
			base.BindRegistry(fs, env, &o.RegistryOptions)
			fs.StringVar(&o.Base, "base", o.Base, "base image to layer on, by digest preferably (required)")
			fs.StringVar(&o.Repository, "repository", o.Repository, "repository that receives the image, e.g. quay.io/org/os (required)")
			fs.StringVar(&o.PayloadBase, "payload-base", o.PayloadBase, "the release payload's OS image; when --base differs, --base must pass the preflight against it")
			fs.StringSliceVar(&o.KmodDigests, "kmod-digest", o.KmodDigests, "digest of a kmod image baked into --base (repeatable)")
			fs.StringVar(&o.Source, "source-url", o.Source, "org.opencontainers.image.source annotation")
			fs.StringVar(&o.ExtensionsImage, "extensions-image", o.ExtensionsImage, "the payload's extensions image for extensions and kernelType (default: the rendered config's baseOSExtensionsContainerImage)")
			fs.StringVar(&o.ContainerfilePath, "containerfile", o.ContainerfilePath, "file with user Containerfile content to add (selects the buildah path)")
			fs.StringVar(&o.BuildahBin, "buildah", o.BuildahBin, "buildah binary")
			base.BindIdentity(fs, &o.IdentityOptions)
		},
	})
}
