package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/report"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/work"
)

func newReportCommand(env base.LookupEnv) *cobra.Command {
	o := report.DefaultOptions()
	format := step.FormatText
	return base.NewStage(base.Stage{
		Name:  work.StageReport,
		Short: "Summarise the run: one row per stage, the failed stage's cause",
		Long: `The finally task of a kiln run: reads what every stage left in the work workspace and the status
Tekton gives each task (--status, or stage=status arguments: the Task passes its statuses array as
$(params.statuses[*])), and prints one summary as plain text within 100 columns: a first line with
the pool, the trigger and what changed (--trigger, --changes), the outcome (the first failed
stage), the image and the nodes updated, then one row per
stage (Skipped for a skipped one; a failed one leads with the cause its step recorded in
<stage>.error). It does not fail for a failed stage; that stage's task already did. With -o json
stdout holds the summary as JSON instead (pool, outcome, lead, stages, failedStage, failure).

Reads:   work/render/, work/kmod/, work/image/, work/rollout/, work/bootimages/, <stage>.error files
Writes:  work/report/summary.txt (also printed), work/report/summary.md (the same as Markdown)
Results: FAILED_STAGE, FAILURE`,
		Example: `  kiln-steps report --pool worker --work /tmp/work --aggregate Failed \
    --trigger machineconfig --changes 'MachineConfig edited 99-worker-ssh' render=Succeeded image-build=Failed`,
		Runner: o,
		Bind: func(fs *pflag.FlagSet) {
			base.BindOptions(fs, env, &o.Options, true)
			fs.StringArrayVar(&o.Statuses, "status", o.Statuses, "stage=status from $(tasks.<name>.status) (repeatable; also accepted as arguments)")
			fs.StringVar(&o.Aggregate, "aggregate", o.Aggregate, "the run's $(tasks.status)")
			fs.StringVar(&o.Trigger, "trigger", o.Trigger, "why the run was made (machineconfig, payload, moduleday0, manual, gitops)")
			fs.StringVar(&o.Changes, "changes", o.Changes, "what changed since the pool's previous run, in one line")
			base.BindFormat(fs, &format)
		},
		Format: &format,
		Args:   func(args []string) { o.Statuses = append(o.Statuses, args...) },
	})
}
