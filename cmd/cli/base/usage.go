package base

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// suggestionsHeader starts cobra's "Did you mean this?" block in an
// unknown-command error (cobra's findSuggestions), one "\t<name>" line
// per suggestion after it.
const suggestionsHeader = "\n\nDid you mean this?\n"

// newHelpCommand replaces cobra's help command, which prints "Unknown
// help topic" and exits 0: an unknown topic is a usage error (exit 2)
// with the same suggestions as an unknown command.
func newHelpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help prints the help of any command: the same text as the command's --help.",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var out []cobra.Completion
			for _, s := range c.Root().Commands() {
				if s.IsAvailableCommand() && strings.HasPrefix(s.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(s.Name(), s.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			cmd, rest, err := root.Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				topic := strings.Join(args, " ")
				msg := fmt.Sprintf("unknown help topic %q", topic)
				if s := root.SuggestionsFor(args[len(args)-1]); len(s) > 0 {
					msg += suggestionsHeader + "\t" + strings.Join(s, "\n\t") + "\n"
				}
				return &exitcode.UsageError{Err: fmt.Errorf("%s", msg)}
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}

// helpCommandOf is root's help command, nil before Execute adds it.
func helpCommandOf(root *cobra.Command) *cobra.Command {
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			return c
		}
	}
	return nil
}

// checkCompletionShells makes `completion <unknown shell>` a usage error.
// cobra's completion command has no Run of its own, so with an unknown
// shell it prints its help and exits 0. It is added here, once the output
// streams are set: cobra's shell subcommands keep the stream they see
// when they are added.
func checkCompletionShells(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" || c.Runnable() {
			continue
		}
		var shells []string
		for _, s := range c.Commands() {
			shells = append(shells, s.Name())
		}
		slices.Sort(shells)
		c.Args = func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &exitcode.UsageError{Err: fmt.Errorf("unknown shell %q for %q: want one of %s", args[0], c.CommandPath(), strings.Join(shells, ", "))}
			}
			return nil
		}
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
}

// printError writes err to w as Execute does: one escaped line prefixed
// with the command path, then cobra's suggestions, when there are any,
// each on its own line, escaped too.
func printError(w io.Writer, path string, err error) {
	msg, suggestions, found := strings.Cut(err.Error(), suggestionsHeader)
	fmt.Fprintf(w, "%s: %s\n", path, oneLine(fmt.Errorf("%s", msg)))
	if !found {
		return
	}
	fmt.Fprintf(w, "\nDid you mean this?\n")
	for _, s := range strings.Split(strings.TrimSpace(suggestions), "\n") {
		if s = strings.TrimSpace(s); s != "" {
			fmt.Fprintf(w, "\t%s\n", termsafe.Escape(s))
		}
	}
	fmt.Fprintln(w)
}
