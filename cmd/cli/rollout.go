package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/pkg/work"
)

func newRolloutCommand(env base.LookupEnv) *cobra.Command {
	o := rollout.DefaultStepOptions()
	return base.NewStage(base.Stage{
		Name:  work.StageRollout,
		Short: "Roll the image out to the pool through MCO",
		Long: `Rolls a verified image out to one MachineConfigPool through MCO's own API. --image is checked
(a digest reference) before anything is asked, then against the signature policy as CRI-O will
on the node; only then is the MachineConfig 99-kiln-<pool>-os-image written with osImageURL by
digest. The step watches the pool and its MachineConfigNodes, supports a canary and a
maxUnavailable override, and rolls back by itself when a node degrades or --timeout passes
(exit code 4). Before any node moves, the drift gate holds the pool paused while MCO renders
kiln's MachineConfig and compares MCO's rendered name with kiln's prediction; with
--drift-gate=enforce a difference stops the rollout, takes the MachineConfig back and writes
the diff (exit code 6). The log has one timestamped line per node phase change (node, phase,
MCO's reason), the canary and gate decisions, a node table when watching starts, at most every
30 s and at the end, and a last line "N/M nodes on <digest> (<rendered config>)". With
--source dir:PATH it writes the MachineConfig as a manifest instead (the GitOps change).

Reads:   the pool and its nodes (cluster), or the pool's manifest (--source dir:PATH);
         work/render/mco-inputs.json, work/image/prediction.json
Writes:  work/rollout/timeline.json, work/rollout/policy/, work/rollout/drift.txt and
         drift.json on a drift; work/rollout/<MachineConfig>.yaml with --source dir:PATH
Results: ROLLOUT_STATE, UPDATED_NODES, DRIFT_GATE`,
		Example: `  kiln-steps rollout --pool worker --work /tmp/work --results-dir /tmp/results \
    --image registry.example.com/os@sha256:<64 hex> --public-key keys/cosign.pub --canary 1 --timeout 2h`,
		Runner: o,
		Bind: func(fs *pflag.FlagSet) {
			base.BindOptions(fs, env, &o.Options, true)
			bindKube(fs, &o.Kube)
			base.BindRegistry(fs, env, &o.Registry)
			fs.StringVar(&o.Image, "image", o.Image, "image to roll out, repository@sha256:<64 hex> (required)")
			fs.StringVar(&o.MaxUnavailable, "max-unavailable", o.MaxUnavailable, "override the pool's maxUnavailable during the rollout (number or percent)")
			fs.IntVar(&o.Canary, "canary", o.Canary, "update this many nodes first, pause, check them, then continue")
			fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "roll back when the pool has not updated by then")
			fs.DurationVar(&o.SettleTimeout, "settle-timeout", o.SettleTimeout, "how long to wait for the pool after a rollback")
			fs.StringVar(&o.PolicyKey, "public-key", o.PolicyKey, "cosign public key the signature policy requires (as verify)")
			fs.StringVar(&o.DriftGate, "drift-gate", o.DriftGate, "before any node moves, compare MCO's rendered config with kiln's prediction: enforce (stop on a difference), warn (record it and go on) or off")
		},
	})
}
