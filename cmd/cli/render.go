package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/render"
	"github.com/kiln-dev/kiln/pkg/work"
)

func newRenderCommand(env base.LookupEnv) *cobra.Command {
	o := render.DefaultStepOptions()
	return base.NewStage(base.Stage{
		Name:  work.StageRender,
		Short: "Render the pool's MachineConfigs as MCO does",
		Long: `Renders a MachineConfigPool's MachineConfigs into one MachineConfig exactly as the Machine Config
Operator does (selection, worker-first order, Ignition merge, MCO's rendered name), with every remote
http(s) source fetched, verified and embedded. Inputs come from the cluster or, with --source dir:PATH,
from a folder of manifests; every object is decoded strictly.

Reads:   the pool, its MachineConfigs, the payload ConfigMaps, a ModuleDay0 (cluster or --source dir);
         --os-image, --extensions-image and --release-version replace the payload ConfigMap's
         (an upgrade-ahead run renders for the release it prepares)
Writes:  work/render/rendered.json, work/render/inputs.json, work/render/moduleday0.json (when a
         ModuleDay0 selects the pool)
Results: RENDERED_NAME, CONFIG_HASH, BASE_IMAGE (the rendered osImageURL as given, a tag or a
         digest), HAS_KMOD, KMOD_BUILD, KMOD_SIGN

It never contacts a container registry.`,
		Example: `  # render pool worker from a folder of manifests
  kiln-steps render --pool worker --source dir:examples/cluster --work /tmp/work --results-dir /tmp/results

  # render from the cluster of the current kubeconfig
  KILN_POOL=worker kiln-steps render --work /tmp/work --results-dir /tmp/results`,
		Runner: o,
		Bind: func(fs *pflag.FlagSet) {
			base.BindOptions(fs, env, &o.Options, true)
			bindKube(fs, &o.KubeOptions)
			fs.DurationVar(&o.FetchTimeout, "fetch-timeout", o.FetchTimeout, "timeout of one fetch of a remote source")
			fs.Int64Var(&o.FetchMaxBytes, "fetch-max-bytes", o.FetchMaxBytes, "largest remote source accepted, in bytes")
			fs.IntVar(&o.FetchAttempts, "fetch-attempts", o.FetchAttempts, "tries per remote source for transient failures")
			fs.StringVar(&o.Release.OSImage, "os-image", o.Release.OSImage, "the base OS image (osImageURL) of the release the run prepares (default: ConfigMap machine-config-osimageurl's baseOSContainerImage)")
			fs.StringVar(&o.Release.ExtensionsImage, "extensions-image", o.Release.ExtensionsImage, "that release's extensions image (default: the ConfigMap's baseOSExtensionsContainerImage)")
			fs.StringVar(&o.Release.Version, "release-version", o.Release.Version, "that release's version (default: the ConfigMap's releaseVersion)")
		},
	})
}
