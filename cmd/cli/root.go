package cli

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

// Binary names.
const (
	StepsName   = "kiln-steps"
	TriggerName = "kiln-trigger"
)

// lookupEnv reads an environment default; tests and the docs generator
// pass their own.
type lookupEnv func(string) (string, bool)

// NewSteps returns the kiln-steps command tree, with environment defaults
// read from the process environment.
func NewSteps() *cobra.Command { return newSteps(os.LookupEnv) }

// NewTrigger returns the kiln-trigger command tree.
func NewTrigger() *cobra.Command { return newTrigger(os.LookupEnv) }

func newSteps(env lookupEnv) *cobra.Command {
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
		newRenderCommand(env), newKmodBuildCommand(env), newKmodAttestCommand(env), newKmodSignCommand(env), newImageBuildCommand(env),
		newImageSignCommand(env), newVerifyCommand(env), newReproduceCommand(env), newRolloutCommand(env), newBootImagesCommand(env),
		newReportCommand(env), newPruneCommand(env),
	)
	bindGlobal(root, env)
	setupRoot(root)
	return root
}

// setupRoot gives a tree the behaviour both binaries share: help and
// version on stdout, errors on stderr, the exit-code table in every help,
// usage errors (bad flag, bad argument) typed so they exit 2.
func setupRoot(root *cobra.Command) {
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
	walk(root, func(c *cobra.Command) {
		if c.Args != nil {
			c.Args = usageArgs(c.Args)
		}
	})
}

func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, s := range c.Commands() {
		walk(s, fn)
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
