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
		Short: "Delete kiln's node and kmod images nothing needs any more (dry run unless --apply)",
		Long: `Computes the keep set from the cluster: the osImageURL of every pool's current and desired rendered
config and of its --keep-per-pool most recent rendered configs, every other MachineConfig's
osImageURL and kiln's kiln.dev/previous-image rollback target, every MachineConfigNode's current
and desired image, every ModuleDay0's containerImage, unsigned image and status.imageDigest, the
images the TaskRuns of every PipelineRun in --runs-namespace not finished report (IMAGE_URL@IMAGE_DIGEST,
KMOD_IMAGE_URL@KMOD_IMAGE_DIGEST), those of the newest finished upgrade-ahead run of each pool and
target release, the --live-image images, and, through each kept image's attestation verified with --public-key, what it
was built from (kmod images, bases). Then lists the tags of each --repository: a manifest a
kiln-<fingerprint> tag names is deleted only when its signature and attestation verify with
--public-key, the tag is the fingerprint of the attested inputs, no other tag names it and the keep
set does not. The ModuleDay0s' kmod image repositories are scanned too, through the .sig/.att tags
that name every image kiln signed: a kmod image is deleted only when its signature and kmod
attestation verify, it was attested for that repository, no tag names it any more (its tag moved
on) and the keep set does not. Prints what stays and why, what goes, and the bytes the registry's
garbage collection frees. With --apply it deletes each image by digest, its fingerprint tag and its
.sig and .att artifacts, reading the cluster again right before each delete; an interrupted prune
is completed by the next one. A registry that refuses deletes fails the step, naming it.

Reads:   the cluster's MachineConfigPools, MachineConfigs, MachineConfigNodes and ModuleDay0s; the
         PipelineRuns and TaskRuns of --runs-namespace; the repositories
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
			fs.StringArrayVar(&o.Repositories, "repository", o.Repositories, "kiln's repository, registry/path (repeatable; required): the only ones prune deletes from, with the ModuleDay0s' kmod image repositories; {pool} stands for each pool's name")
			fs.StringVar(&o.PublicKey, "public-key", o.PublicKey, "kiln's cosign public key: only images it verifies are kiln's")
			fs.IntVar(&o.KeepPerPool, "keep-per-pool", o.KeepPerPool, "images of each pool's most recent rendered configs to keep")
			fs.StringArrayVar(&o.LiveImages, "live-image", o.LiveImages, "image of a run in progress or queued, kept (repeatable)")
			fs.StringVar(&o.RunsNamespace, "runs-namespace", o.RunsNamespace, "namespace of kiln's PipelineRuns: images of runs not finished and of the newest upgrade-ahead runs are kept (\"\" reads none)")
			fs.BoolVar(&o.Apply, "apply", o.Apply, "delete; without it only the plan is printed")
			base.BindFormat(fs, &format)
		},
		Format: &format,
	})
}
