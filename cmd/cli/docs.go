package cli

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kiln-dev/kiln/pkg/step"
)

// README markers around the generated "Command line" section.
const (
	DocsBegin = "<!-- BEGIN generated command line: go run ./cmd/cli/gen -->"
	DocsEnd   = "<!-- END generated command line -->"
)

// noEnv is the environment the docs are generated in: none, so README
// does not depend on the shell that wrote it.
func noEnv(string) (string, bool) { return "", false }

// Markdown is README's "Command line" section: every command of both
// binaries with its description, flags and examples, then the exit codes.
func Markdown() string {
	var b bytes.Buffer
	b.WriteString("Both binaries are built on cobra: `--help` on every command (or `kiln-steps help <command>`), " +
		"`version` and `--version`, `completion bash|zsh|fish|powershell`. Help goes to stdout; errors go to " +
		"stderr, prefixed with the command. A flag whose help names an environment variable takes its default " +
		"from it.\n\n")
	for _, root := range []*cobra.Command{newSteps(noEnv), newTrigger(noEnv)} {
		walk(root, func(c *cobra.Command) {
			if c.Hidden || c.Name() == "help" || c.Name() == "version" || c.Name() == "completion" ||
				(c.Parent() != nil && c.Parent().Name() == "completion") {
				return
			}
			writeCommand(&b, c)
		})
	}
	b.WriteString("### Exit codes\n\nThe same in both binaries, and printed by every `--help`:\n\n")
	b.WriteString(step.ExitCodesMarkdown())
	return b.String()
}

func writeCommand(b *bytes.Buffer, c *cobra.Command) {
	fmt.Fprintf(b, "### `%s`\n\n%s.\n\n", c.CommandPath(), c.Short)
	fmt.Fprintf(b, "```\n%s\n\nUsage:\n  %s\n", strings.TrimSpace(c.Long), c.UseLine())
	if fl := c.LocalNonPersistentFlags().FlagUsages(); fl != "" && c.Runnable() {
		fmt.Fprintf(b, "\nFlags:\n%s", fl)
	}
	if c.Example != "" {
		fmt.Fprintf(b, "\nExamples:\n%s\n", c.Example)
	}
	b.WriteString("```\n\n")
}

// UpdateREADME rewrites the section between the markers of the README at
// path with Markdown.
func UpdateREADME(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	out, err := replaceSection(string(b), Markdown())
	if err != nil {
		return fmt.Errorf("updating %s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// section returns what README holds between the markers.
func section(readme string) (string, error) {
	_, rest, ok := strings.Cut(readme, DocsBegin+"\n")
	if !ok {
		return "", fmt.Errorf("no %q marker", DocsBegin)
	}
	body, _, ok := strings.Cut(rest, DocsEnd)
	if !ok {
		return "", fmt.Errorf("no %q marker", DocsEnd)
	}
	return body, nil
}

func replaceSection(readme, body string) (string, error) {
	old, err := section(readme)
	if err != nil {
		return "", err
	}
	return strings.Replace(readme, DocsBegin+"\n"+old+DocsEnd, DocsBegin+"\n"+body+DocsEnd, 1), nil
}
