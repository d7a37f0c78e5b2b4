package base

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// SetupRoot gives a tree the behaviour both binaries share: help and
// version on stdout, errors on stderr, the exit-code table in every help,
// usage errors (bad flag, bad argument) typed so they exit 2.
func SetupRoot(root *cobra.Command) {
	root.Version = versionString()
	root.SetVersionTemplate("{{.Version}}")
	root.SilenceUsage = true
	root.SilenceErrors = true
	root.CompletionOptions.HiddenDefaultCmd = false
	root.AddCommand(newVersionCommand())
	warningsToStderr(root)
	root.SetHelpCommand(newHelpCommand())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitcode.UsageError{Err: err} })
	root.SetUsageTemplate(root.UsageTemplate() + exitCodesHelp())
	// cobra adds help and completion when it executes, after Execute set
	// the output streams (completion captures them when it is added).
	Walk(root, func(c *cobra.Command) {
		if c.Args != nil {
			c.Args = usageArgs(c.Args)
		}
	})
}

// Walk calls fn on c and on every command below it.
func Walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, s := range c.Commands() {
		Walk(s, fn)
	}
}

// exitCodesHelp is the exit-code table as a help section.
func exitCodesHelp() string {
	var b bytes.Buffer
	b.WriteString("\nExit codes:\n")
	exitcode.WriteExitCodes(&b)
	return b.String()
}

// usageArgs makes an argument validator's error a usage error (exit 2).
func usageArgs(f cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := f(cmd, args); err != nil {
			var u *exitcode.UsageError
			if errors.As(err, &u) {
				return err
			}
			return &exitcode.UsageError{Err: err}
		}
		return nil
	}
}

// ranError marks an error returned by a command's own run (not by cobra's
// parsing), so Execute knows cobra did not fail on the command line.
type ranError struct{ err error }

func (e *ranError) Error() string { return e.err.Error() }
func (e *ranError) Unwrap() error { return e.err }

// Ran marks err as returned by a command's own run, for a command built
// without NewStage (kiln-trigger's root).
func Ran(err error) error { return &ranError{err: err} }

// Execute runs root with args and returns the exit code. Help and version
// go to out; errors go to errw, one line prefixed with the command path,
// plus a hint for usage errors.
func Execute(ctx context.Context, root *cobra.Command, args []string, out, errw io.Writer) int {
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(errw)
	checkCompletionShells(root)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitcode.ExitOK
	}
	code := exitcode.CodeOf(err)
	var ran *ranError
	if !errors.As(err, &ran) {
		// cobra's own errors (unknown command, flag or argument) are
		// usage errors whatever their type.
		code = exitcode.ExitUsage
	}
	if cmd == nil || cmd == helpCommandOf(root) {
		// An unknown help topic is the root's usage error.
		cmd = root
	}
	printError(errw, cmd.CommandPath(), err)
	if code == exitcode.ExitUsage {
		fmt.Fprintf(errw, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

// oneLine joins a multi-error (errors.Join) into one line, escaped
// (termsafe): an error carries text from outside, such as a registry's
// error message, and stderr is someone's terminal.
func oneLine(err error) string {
	return termsafe.Escape(strings.Join(strings.Split(strings.TrimSpace(err.Error()), "\n"), "; "))
}

// Main runs a binary's tree on the process's arguments and exits; SIGINT
// and SIGTERM cancel its context, and end the process if the command has
// not returned StopGrace later (runUntilSignalled).
func Main(newRoot func() *cobra.Command) {
	os.Exit(runUntilSignalled(newRoot(), os.Args[1:], os.Stdout, os.Stderr, StopGrace))
}
