package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/pkg/step"
)

// stage describes one kiln-steps subcommand.
type stage struct {
	name, short, long, example string
	// cause is the Pipeline task whose row shows this step's failure
	// cause (its <task>.error file); empty means name. A Task's second
	// step records under its Task's name.
	cause string
	// runner is the stage's options struct, filled by the flags.
	runner step.Runner
	// bind registers the stage's flags on fs.
	bind func(fs *pflag.FlagSet)
	// args, when set, accepts positional arguments (a Task's array
	// param, $(params.x[*])); without it the stage takes none.
	args func(args []string)
}

// newStage builds a subcommand: flags bound, Validate in PreRunE (before
// any I/O, a usage error), then Run.
func newStage(s stage) *cobra.Command {
	c := &cobra.Command{
		Use:     s.name + " [flags]",
		Short:   s.short,
		Long:    s.long,
		Example: s.example,
		Args:    cobra.NoArgs,
		PreRunE: func(_ *cobra.Command, args []string) error {
			if s.args != nil {
				s.args(args)
			}
			return asUsage(s.runner.Validate())
		},
		RunE: func(c *cobra.Command, _ []string) error {
			ws := workspaceOf(s.runner)
			cause := s.cause
			if cause == "" {
				cause = s.name
			}
			if err := ws.ClearCause(cause); err != nil {
				return &ranError{err: fmt.Errorf("removing an earlier attempt's cause: %w", err)}
			}
			if err := s.runner.Run(c.Context(), step.Streams{Out: c.OutOrStdout(), Err: c.ErrOrStderr()}); err != nil {
				// The report shows the cause in the stage's row; failing
				// to record it must not hide the error itself.
				if werr := ws.WriteCause(cause, err); werr != nil {
					fmt.Fprintf(c.ErrOrStderr(), "%s: recording the cause: %s\n", c.CommandPath(), oneLine(werr))
				}
				return &ranError{err: err}
			}
			return nil
		},
	}
	if s.args != nil {
		c.Args = cobra.ArbitraryArgs
		c.Use = s.name + " [flags] [args...]"
	}
	c.Flags().SortFlags = false
	s.bind(c.Flags())
	return c
}

// asUsage makes a validation error a usage error (exit 2), whatever type
// the options struct gave it.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	if step.CodeOf(err) == step.ExitUsage {
		return err
	}
	return &step.UsageError{Err: err}
}

// workspaceOf is the work workspace of a stage's options; the zero
// Workspace (nowhere to write) for commands without one.
func workspaceOf(r any) step.Workspace {
	if w, ok := r.(interface{ Workspace() step.Workspace }); ok {
		return w.Workspace()
	}
	return step.Workspace{}
}
