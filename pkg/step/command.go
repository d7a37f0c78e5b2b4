package step

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// Exit codes of kiln-steps, in the manner of Tekton's entrypoint: a typed
// error decides the code.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// UsageError is a bad command line; it exits with ExitUsage.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Runner is one stage's options struct: it registers its flags, then runs
// with the values parsed into it.
type Runner interface {
	AddFlags(fs *pflag.FlagSet)
	Run(ctx context.Context, s Streams) error
}

// PositionalArgs is implemented by a Runner that takes arguments after its
// flags (Tekton passes an array param that way: $(params.x[*])).
type PositionalArgs interface {
	SetArgs(args []string) error
}

// Streams are a run's output streams. Progress lines go to Out; errors to Err.
type Streams struct {
	Out io.Writer
	Err io.Writer
}

// Command is one subcommand of a multi-call binary.
type Command struct {
	Name    string
	Summary string
	// New returns a fresh options struct for one invocation.
	New func() Runner
}

// Main runs the subcommand named by args[0] and returns the exit code.
func Main(ctx context.Context, prog string, cmds []Command, args []string, s Streams) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		Usage(s.Out, prog, cmds)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	cmd, ok := find(cmds, args[0])
	if !ok {
		fmt.Fprintf(s.Err, "%s: unknown subcommand %q\n\n", prog, args[0])
		Usage(s.Err, prog, cmds)
		return ExitUsage
	}
	err := run(ctx, prog, cmd, args[1:], s)
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, pflag.ErrHelp):
		return ExitOK
	}
	fmt.Fprintf(s.Err, "%s %s: %v\n", prog, cmd.Name, err)
	var usage *UsageError
	if errors.As(err, &usage) {
		return ExitUsage
	}
	return ExitFailure
}

func run(ctx context.Context, prog string, cmd Command, args []string, s Streams) error {
	r := cmd.New()
	fs := pflag.NewFlagSet(prog+" "+cmd.Name, pflag.ContinueOnError)
	fs.SetOutput(s.Err)
	fs.Usage = func() {
		fmt.Fprintf(s.Err, "%s %s: %s\n\nUsage: %s %s [flags]\n\nFlags:\n%s", prog, cmd.Name, cmd.Summary, prog, cmd.Name, fs.FlagUsages())
	}
	r.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return &UsageError{Err: err}
	}
	if fs.NArg() > 0 {
		pa, ok := r.(PositionalArgs)
		if !ok {
			return &UsageError{Err: fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))}
		}
		if err := pa.SetArgs(fs.Args()); err != nil {
			return &UsageError{Err: err}
		}
	}
	return r.Run(ctx, s)
}

// Usage prints the list of subcommands.
func Usage(w io.Writer, prog string, cmds []Command) {
	fmt.Fprintf(w, "Usage: %s <subcommand> [flags]\n\nSubcommands:\n", prog)
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.Name))
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.Name, c.Summary)
	}
	fmt.Fprintf(w, "\nRun '%s <subcommand> --help' for its flags.\n", prog)
}

func find(cmds []Command, name string) (Command, bool) {
	for _, c := range cmds {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}
