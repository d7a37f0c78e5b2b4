package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/signing"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/work"
)

func newVerifyCommand(env base.LookupEnv) *cobra.Command {
	o := signing.DefaultVerifyOptions()
	format := step.FormatText
	return base.NewStage(base.Stage{
		Name:  work.StageVerify,
		Short: "Verify the image against a containers policy.json",
		Long: `Checks the image the way CRI-O does on the node: a containers/image policy.json with a
sigstoreSigned requirement for the repository and --public-key, signatures found through sigstore
attachments. A tag is refused before any registry is asked: the policy is evaluated for one digest.
Writes the policy.json and registries.d fragments a cluster admin installs on nodes. An unsigned
image, a tampered image or a wrong key is refused (exit code 3), saying why; a registry that gives
no answer (unreachable, 401/403, 404, 5xx, timeout) is a failure (exit code 1). With -o json the
decision is printed on stdout as JSON (image, verified, the policy files, the reason for a refusal).

Reads:   the image's signatures in its registry
Writes:  work/image/policy.json and the registries.d fragment
Results: VERIFIED (true or false)`,
		Example: `  kiln-steps verify --pool worker --work /tmp/work --results-dir /tmp/results \
    --image registry.example.com/os@sha256:<64 hex> --public-key keys/cosign.pub`,
		Runner: o,
		Bind: func(fs *pflag.FlagSet) {
			base.BindOptions(fs, env, &o.Options, true)
			base.BindRegistry(fs, env, &o.RegistryOptions)
			fs.StringVar(&o.Image, "image", o.Image, "image to check as nodes pull it, repository@sha256:<64 hex> (required)")
			fs.StringVar(&o.PublicKey, "public-key", o.PublicKey, "cosign public key the policy requires")
			fs.StringVar(&o.NodeKeyPath, "node-key-path", o.NodeKeyPath, "where the key lives on nodes, for the policy fragment")
			base.BindFormat(fs, &format)
		},
		Format: &format,
	})
}
