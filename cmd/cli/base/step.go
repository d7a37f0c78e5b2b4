package base

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/work"
)

// Stage describes one kiln-steps subcommand.
type Stage struct {
	Name, Short, Long, Example string
	// Cause is the Pipeline task whose row shows this step's failure
	// cause (its <task>.error file); empty means name. A Task's second
	// step records under its Task's name.
	Cause string
	// Runner is the stage's options struct, filled by the flags.
	Runner step.Runner
	// Bind registers the stage's flags on fs.
	Bind func(fs *pflag.FlagSet)
	// Args, when set, accepts positional arguments (a Task's array
	// param, $(params.x[*])); without it the stage takes none.
	Args func(args []string)
	// Format, when set, is the stage's -o/--output (BindFormat): with
	// json the runner's Result is printed as JSON on stdout and its
	// progress and text go to stderr.
	Format *string
	// Check, when set, runs first in PreRunE with the parsed command
	// line: what a flag binding alone cannot say (a deprecated flag's
	// old meaning, a flag given twice under two names).
	Check func(c *cobra.Command) error
}

// resulter is a runner with a result to print as JSON; Result is nil when
// the run did not get far enough to have one.
type resulter interface{ Result() any }

// NewStage builds a subcommand: flags bound, Validate in PreRunE (before
// any I/O, a usage error), then Run.
func NewStage(s Stage) *cobra.Command {
	c := &cobra.Command{
		Use:     s.Name + " [flags]",
		Short:   s.Short,
		Long:    s.Long,
		Example: s.Example,
		Args:    cobra.NoArgs,
		PreRunE: func(c *cobra.Command, args []string) error {
			if s.Check != nil {
				if err := s.Check(c); err != nil {
					return AsUsage(err)
				}
			}
			if s.Args != nil {
				s.Args(args)
			}
			err := s.Runner.Validate()
			if s.Format != nil {
				if ferr := step.ValidateFormat(*s.Format); ferr != nil {
					err = errors.Join(err, ferr)
				}
			}
			return AsUsage(err)
		},
		RunE: func(c *cobra.Command, _ []string) error { return runStage(c, s) },
	}
	if s.Args != nil {
		c.Args = cobra.ArbitraryArgs
		c.Use = s.Name + " [flags] [args...]"
	}
	c.Flags().SortFlags = false
	s.Bind(c.Flags())
	return c
}

// runStage clears an earlier attempt's cause, runs the stage and records
// the cause of a failure; with -o json it prints the result on stdout.
func runStage(c *cobra.Command, s Stage) error {
	ws := workspaceOf(s.Runner)
	cause := s.Cause
	if cause == "" {
		cause = s.Name
	}
	if err := ws.ClearCause(cause); err != nil {
		return &ranError{err: fmt.Errorf("removing an earlier attempt's cause: %w", err)}
	}
	streams := step.Streams{Out: c.OutOrStdout(), Err: c.ErrOrStderr()}
	asJSON := s.Format != nil && *s.Format == step.FormatJSON
	if asJSON {
		streams.Out = c.ErrOrStderr()
	}
	err := s.Runner.Run(c.Context(), streams)
	if asJSON {
		// Printed for a refusal too: a script reads why.
		if jerr := printResult(c.OutOrStdout(), s.Runner); jerr != nil && err == nil {
			err = jerr
		}
	}
	if err != nil {
		// The report shows the cause in the stage's row; failing to
		// record it must not hide the error itself.
		if werr := ws.WriteCause(cause, err); werr != nil {
			fmt.Fprintf(c.ErrOrStderr(), "%s: recording the cause: %s\n", c.CommandPath(), oneLine(werr))
		}
		return &ranError{err: err}
	}
	return nil
}

// printResult writes the runner's result as indented JSON, if it has one.
func printResult(w io.Writer, r step.Runner) error {
	res, ok := r.(resulter)
	if !ok || res.Result() == nil {
		return nil
	}
	b, err := json.MarshalIndent(res.Result(), "", "  ")
	if err != nil {
		return fmt.Errorf("printing the result as JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// AsUsage makes a validation error a usage error (exit 2), whatever type
// the options struct gave it.
func AsUsage(err error) error {
	if err == nil {
		return nil
	}
	if exitcode.CodeOf(err) == exitcode.ExitUsage {
		return err
	}
	return &exitcode.UsageError{Err: err}
}

// workspaceOf is the work workspace of a stage's options; the zero
// Workspace (nowhere to write) for commands without one.
func workspaceOf(r any) work.Workspace {
	if w, ok := r.(interface{ Workspace() work.Workspace }); ok {
		return w.Workspace()
	}
	return work.Workspace{}
}
