package cli

import (
	"context"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/cmd/cli/imagebuildcmd"
)

// Binary names.
const (
	StepsName   = "kiln-steps"
	TriggerName = "kiln-trigger"
)

// NewSteps returns the kiln-steps command tree, with environment defaults
// read from the process environment.
func NewSteps() *cobra.Command { return newSteps(os.LookupEnv) }

// NewTrigger returns the kiln-trigger command tree.
func NewTrigger() *cobra.Command { return newTrigger(os.LookupEnv) }

func newSteps(env base.LookupEnv) *cobra.Command {
	// Subcommands are listed in pipeline order, as added.
	cobra.EnableCommandSorting = false
	root := &cobra.Command{
		Use:   StepsName,
		Short: "The steps of kiln's Tekton Tasks: one subcommand per stage",
		Long: `kiln-steps is the one binary behind every step of kiln's Tekton Tasks: one subcommand per
stage of the node-image pipeline, listed in pipeline order. Each reads and writes the "work"
workspace (--work) and writes its Tekton results into --results-dir:
render/ (rendered.json, inputs.json), kmod/, image/, rollout/, bootimages/, report/.`,
		Example: `  # render pool worker from a folder of manifests, then build its image
  kiln-steps render --pool worker --source dir:examples/cluster --work /tmp/work --results-dir /tmp/results
  kiln-steps image-build --pool worker --work /tmp/work --results-dir /tmp/results \
    --base "$(cat /tmp/results/BASE_IMAGE)" --repository registry.example.com/os

  # the flags of one stage
  kiln-steps help rollout`,
		// No Args: cobra then reports an unknown subcommand (exit 2).
	}
	root.AddCommand(
		newRenderCommand(env), newKmodBuildCommand(env), newKmodAttestCommand(env), newKmodSignCommand(env), imagebuildcmd.New(env),
		newImageSignCommand(env), newVerifyCommand(env), newReproduceCommand(env), newRolloutCommand(env), newBootImagesCommand(env),
		newReportCommand(env), newPruneCommand(env),
	)
	base.BindGlobal(root, env)
	base.SetupRoot(root)
	return root
}

// Execute runs root with args and returns the exit code (base.Execute).
func Execute(ctx context.Context, root *cobra.Command, args []string, out, errw io.Writer) int {
	return base.Execute(ctx, root, args, out, errw)
}

// Main runs a binary's tree on the process's arguments and exits
// (base.Main).
func Main(newRoot func() *cobra.Command) { base.Main(newRoot) }
