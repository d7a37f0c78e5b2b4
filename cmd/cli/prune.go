package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/prune"
	"github.com/kiln-dev/kiln/pkg/step"
)

func newPruneCommand(env base.LookupEnv) *cobra.Command {
	o := prune.DefaultOptions()
	format := step.FormatText
	return base.NewStage(base.Stage{
		Name:  prune.Stage,
		Short: "Delete kiln's node images nothing needs any more (dry run unless --apply)",
		Long: `Computes the keep set from the cluster: the osImageURL of every pool's current and desired rendered
config and of its --keep-per-pool most recent rendered configs, every other MachineConfig's
osImageURL and kiln's kiln.dev/previous-image rollback target, every MachineConfigNode's current
and desired image, the --live-image images, and, through each kept image's attestation verified with
--public-key, what it was built from (kmod images, bases). Then lists the tags of each --repository:
a manifest a kiln-<fingerprint> tag names is deleted only when its signature and attestation
verify with --public-key, the tag is the fingerprint of the attested inputs, no other tag names it
and the keep set does not. Prints what stays and why, what goes, and the bytes the registry's
garbage collection frees. With --apply it deletes each image by digest, its fingerprint tag and its
.sig and .att artifacts, reading the cluster again right before each delete; an interrupted prune
is completed by the next one. A registry that refuses deletes fails the step, naming it.

Reads:   the cluster's MachineConfigPools, MachineConfigs and MachineConfigNodes; the repositories
Writes:  work/prune/report.json
Results: DELETED, FREED_BYTES`,
		Example: `  kiln-steps prune --work /tmp/work --results-dir /tmp/results \
    --repository registry.example.com/kiln/os --public-key keys/cosign.pub
  kiln-steps prune --work /tmp/work --results-dir /tmp/results \
    --repository registry.example.com/kiln/os --public-key keys/cosign.pub --apply`,
		Runner: o,
		Bind: func(fs *pflag.FlagSet) {
			base.BindOptions(fs, env, &o.Options, false)
			bindKubeconfig(fs, &o.Kube.Kubeconfig, &o.Kube.Context)
			base.BindRegistry(fs, env, &o.Registry)
			fs.StringArrayVar(&o.Repositories, "repository", o.Repositories, "kiln's repository, registry/path (repeatable; required): the only ones prune deletes from")
			fs.StringVar(&o.PublicKey, "public-key", o.PublicKey, "kiln's cosign public key: only images it verifies are kiln's")
			fs.IntVar(&o.KeepPerPool, "keep-per-pool", o.KeepPerPool, "images of each pool's most recent rendered configs to keep")
			fs.StringArrayVar(&o.LiveImages, "live-image", o.LiveImages, "image of a run in progress or queued, kept (repeatable)")
			fs.BoolVar(&o.Apply, "apply", o.Apply, "delete; without it only the plan is printed")
			base.BindFormat(fs, &format)
		},
		Format: &format,
	})
}
