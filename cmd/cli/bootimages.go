package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/bootimage"
	"github.com/kiln-dev/kiln/pkg/work"
)

func newBootImagesCommand(env base.LookupEnv) *cobra.Command {
	o := bootimage.DefaultOptions()
	return base.NewStage(base.Stage{
		Name:  work.StageBootImages,
		Short: "Update the MachineSets' boot images",
		Long: `Updates the boot image of every opted-in Machine API MachineSet (MachineConfiguration/cluster
spec.managedBootImages), and of the Cluster API MachineSets selected by --capi-mode, to the
release's coreos-bootimages stream, as MCO does. It takes no --pool: boot images are per cluster,
not per pool. With --source dir:PATH the patched manifests are written to --output-dir instead.

Reads:   MachineSets, MachineConfiguration/cluster, ClusterVersion, the coreos-bootimages ConfigMap
Writes:  work/bootimages/report.json, work/bootimages/metrics.prom; patched MachineSets (cluster)
         or work/bootimages/manifests/ (--source dir:PATH)
Results: MACHINESETS_PATCHED, MACHINESETS_SKIPPED`,
		Example: `  kiln-steps bootimages --source dir:examples/cluster --work /tmp/work --results-dir /tmp/results
  kiln-steps bootimages --work /tmp/work --results-dir /tmp/results --capi-mode Partial --capi-selector env=prod`,
		Runner: o,
		Bind: func(fs *pflag.FlagSet) {
			base.BindOptions(fs, env, &o.Options, false)
			bindKube(fs, &o.KubeOptions)
			fs.StringVar(&o.Namespace, "machine-api-namespace", o.Namespace, "namespace of the Machine API MachineSets")
			fs.DurationVar(&o.StableTimeout, "stable-timeout", o.StableTimeout, "how long to wait for a stable cluster (ClusterVersion history[0] Completed, as MCO)")
			fs.StringVar(&o.DefaultArch, "default-arch", o.DefaultArch, "stream architecture of MachineSets without the autoscaler arch annotation (default: this machine's)")
			hideDefault(fs, "default-arch")
			fs.StringVar(&o.DefaultOptIn, "default-opt-in", o.DefaultOptIn, `opt-in when the admin has none: "platform" (the platform's default), "true" or "false"`)
			fs.StringVar(&o.VSphereTemplates, "vsphere-templates", o.VSphereTemplates, "ConfigMap namespace/name mapping stream releases to vSphere template names")
			fs.StringVar(&o.SkewLimits.OCP, "skew-limit-ocp", o.SkewLimits.OCP, "oldest OCP version boot images may come from (skew enforcement)")
			fs.StringVar(&o.SkewLimits.RHCOS, "skew-limit-rhcos", o.SkewLimits.RHCOS, "oldest RHEL major.minor of RHCOS boot images (skew enforcement)")
			fs.BoolVar(&o.NoHistory, "no-history", o.NoHistory, "do not record BootImageHistory objects")
			fs.StringVar(&o.CAPIMode, "capi-mode", o.CAPIMode, "Cluster API MachineSets (cluster.x-k8s.io) to manage: None, All or Partial (with --capi-selector)")
			fs.StringVar(&o.CAPISelector, "capi-selector", o.CAPISelector, "label selector of the Cluster API MachineSets to manage (mode Partial)")
			fs.StringVar(&o.CAPINamespace, "capi-namespace", o.CAPINamespace, "namespace of the Cluster API MachineSets and their templates")
			fs.StringVar(&o.Output, "output-dir", o.Output, "local mode: folder for the changed manifests (default <work>/bootimages/manifests)")
			deprecatedAlias(fs, "output", "output-dir")
		},
		Check: func(c *cobra.Command) error { return checkOldFolderFlag(c, "output", "output-dir") },
	})
}
