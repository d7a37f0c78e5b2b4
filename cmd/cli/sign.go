package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/signing"
	"github.com/kiln-dev/kiln/pkg/work"
)

func newImageSignCommand(env base.LookupEnv) *cobra.Command {
	o := signing.DefaultSignOptions()
	// pkg/signing cannot import pkg/render (render's tests import kmod,
	// which imports signing): the drift gate's prediction is wired here.
	o.Predict = mcrender.PredictFromWorkspace
	return base.NewStage(base.Stage{
		Name:  work.StageImageSign,
		Short: "Sign the image and attach SLSA provenance with cosign",
		Long: `Signs the layered OS image with cosign (--key, a mounted Secret; or --keyless with Fulcio and
Rekor) and attaches an in-toto SLSA v1 provenance attestation of its inputs (rendered config hash,
base digest, kmod digests, run id), in cosign's registry layout so "cosign verify --key" and
"cosign verify-attestation --key" accept them. --image must be the image image-build described.

Reads:   work/image/build.json
Writes:  work/image/sign.json, work/image/prediction.json (the pool's next rendered name with
         this image, for rollout's drift gate, from work/render/mco-inputs.json); the signature
         and attestation next to the image in its registry
Results: SIGNATURE_REF, ATTESTATION_REF, PREDICTED_RENDERED_NAME`,
		Example: `  kiln-steps image-sign --pool worker --work /tmp/work --results-dir /tmp/results \
    --image "$(cat /tmp/results/IMAGE_URL)@$(cat /tmp/results/IMAGE_DIGEST)" \
    --key keys/cosign.key --key-password-file keys/cosign.password`,
		Runner: o,
		Bind: func(fs *pflag.FlagSet) {
			base.BindOptions(fs, env, &o.Options, true)
			base.BindRegistry(fs, env, &o.RegistryOptions)
			fs.StringVar(&o.Image, "image", o.Image, "image to sign, repository@sha256:<64 hex> (image-build's IMAGE_URL@IMAGE_DIGEST; required)")
			bindAttest(fs, env, &o.AttestOptions)
		},
	})
}
