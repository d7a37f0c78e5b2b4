package cli

import (
	"flag"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/localrun"
	"github.com/kiln-dev/kiln/pkg/trigger"
)

func newTrigger(env base.LookupEnv) *cobra.Command {
	o := trigger.DefaultOptions()
	zo := zap.Options{}
	var verbose *bool
	root := &cobra.Command{
		Use:   TriggerName + " [flags]",
		Short: "Start kiln's pipelines when node configuration changes",
		Long: `In a cluster (--source cluster) the trigger is a controller: it watches every input of each
MachineConfigPool (MachineConfigs, the payload ConfigMaps, ModuleDay0s, registries), waits for a
burst of edits to settle, and creates one node-image PipelineRun per changed pool in --namespace.
Logs go to stderr, shaped by the --zap-* flags; --verbose is --zap-log-level debug.

With --source dir:PATH --once it runs the same pipeline locally on a folder of manifests, with
kiln-steps (--steps) and the Tasks under --root, and leaves the GitOps change in --output-dir:
MachineConfigs, MachineSets, rendered configs, run folders, keys and state. A failed step is
reported with its task, step, exit code and the last lines of its log.`,
		Example: `  # local mode: run the pipeline on the sample cluster, results in _out/
  kiln-trigger --source dir:examples/cluster --once --output-dir _out --steps bin/kiln-steps --root .

  # in a cluster, as the manager Deployment runs it
  kiln-trigger --namespace kiln --leader-elect --zap-log-level info --zap-encoder json`,
		Args: cobra.NoArgs,
		PreRunE: func(c *cobra.Command, _ []string) error {
			if err := checkOldFolderFlag(c, "output", "output-dir"); err != nil {
				return base.AsUsage(err)
			}
			return base.AsUsage(o.Validate())
		},
		RunE: func(c *cobra.Command, _ []string) error {
			if *verbose && !c.Flags().Changed("zap-log-level") {
				zo.Level = zapcore.DebugLevel
			}
			o.Local.Verbose = *verbose
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zo), zap.WriteTo(c.ErrOrStderr())))
			var err error
			if o.Source == kube.SourceCluster {
				err = trigger.Run(c.Context(), o)
			} else {
				// Local mode (--source dir:PATH) runs the pipeline here.
				err = localrun.Run(c.Context(), o, os.Stdout)
			}
			if err != nil {
				return base.Ran(err)
			}
			return nil
		},
	}
	fs := root.Flags()
	fs.SortFlags = false
	bindTrigger(fs, env, &o)
	gofs := flag.NewFlagSet(TriggerName, flag.ContinueOnError)
	zo.BindFlags(gofs)
	fs.AddGoFlagSet(gofs)
	verbose = base.BindGlobal(root, env)
	base.SetupRoot(root)
	return root
}

// bindTrigger binds the trigger's flags. Those the steps have too
// (--source, --kubeconfig, --context, --insecure-registry) share their
// binders and meaning; --output-dir is a folder, as in bootimages.
func bindTrigger(fs *pflag.FlagSet, env base.LookupEnv, o *trigger.Options) {
	fs.StringVar(&o.Source, "source", o.Source, `where inputs come from: "cluster" or "dir:PATH" (a folder of manifests)`)
	fs.BoolVar(&o.Once, "once", o.Once, "run one pass and exit (local mode)")
	bindKubeconfig(fs, &o.Kubeconfig, &o.Context)
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace of the PipelineRuns (cluster mode)")
	fs.StringVar(&o.Output, "output-dir", o.Output, "local mode: folder for the GitOps change (MachineConfigs, MachineSets, rendered configs), run folders, keys and state")
	deprecatedAlias(fs, "output", "output-dir")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "address of the metrics endpoint")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "use leader election (cluster mode)")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "address of /healthz and /readyz")
	fs.DurationVar(&o.Settle, "settle", o.Settle, "quiet time after the last input change before a pool's run is made")
	fs.DurationVar(&o.MaxSettle, "max-settle", o.MaxSettle, "longest wait for a burst of changes to end")
	base.SliceVar(fs, env, &o.Insecure, "insecure-registry", base.EnvInsecureRegistry, "registry host[:port] reached over plain HTTP (repeatable)")
	fs.StringVar(&o.Local.Registry, "registry", o.Local.Registry, "local mode: registry host[:port] for the images (default: an embedded registry)")
	fs.StringVar(&o.Local.Keys, "keys-dir", o.Local.Keys, "local mode: folder of the signing keys, kept and reused: cosign/ (cosign.key, cosign.pub, cosign.password; "+
		"put your own pair there), kmod-cert/cert and kmod-key/key; what is missing is generated on first use (default: keys/ under --output-dir)")
	deprecatedAlias(fs, "local-keys", "keys-dir")
	// --key-dir named a cosign key folder alone, used as it is; kept for
	// one release with its meaning, hidden.
	fs.StringVar(&o.Local.Key, "key-dir", o.Local.Key, "local mode: folder with cosign.key, cosign.pub, cosign.password")
	if err := fs.MarkDeprecated("key-dir", "put cosign.key, cosign.pub and cosign.password in the cosign/ folder of --keys-dir instead"); err != nil {
		panic(err)
	}
	fs.StringVar(&o.Local.StepBinary, "steps", o.Local.StepBinary, "local mode: the kiln-steps binary")
	fs.StringVar(&o.Local.Root, "root", o.Local.Root, "local mode: folder holding pipelines/ and tasks/")
	fs.StringSliceVar(&o.Local.BootImagePools, "boot-image-pools", o.Local.BootImagePools, "local mode: pools whose run ends with the bootimages stage")
}
