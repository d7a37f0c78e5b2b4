package base

import (
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// EnvVerbose turns --verbose on from the environment: the trigger's
// local mode sets it for its steps when it is verbose itself.
const EnvVerbose = "KILN_VERBOSE"

// verboseUsage says what --verbose turns on, in both binaries.
const verboseUsage = "debug output on stderr: one line per registry request (method, URL without its query, status, time); " +
	"the trigger also logs at zap's debug level unless --zap-log-level is given, and passes it on to local mode's steps"

// BindGlobal gives a tree the flags every command of it has: -v/--verbose
// (crane's meaning; --version then has no shorthand, cobra gives -v to it
// only when -v is free). It returns where --verbose is stored.
func BindGlobal(root *cobra.Command, env LookupEnv) *bool {
	verbose := new(bool)
	if v, ok := env(EnvVerbose); ok {
		*verbose, _ = strconv.ParseBool(v) // anything but a true value is off
	}
	root.PersistentFlags().BoolVarP(verbose, "verbose", "v", *verbose, verboseUsage+" (env "+EnvVerbose+")")
	root.PersistentPreRun = func(c *cobra.Command, _ []string) {
		var w io.Writer
		if *verbose {
			w = c.ErrOrStderr()
		}
		registry.SetDebugOutput(w)
	}
	return verbose
}

// warningsToStderr sends pflag's own messages (a deprecated flag's
// warning) to the command's stderr. cobra prints them on its output
// stream, which Execute sets to stdout, where they would corrupt -o json.
func warningsToStderr(root *cobra.Command) {
	Walk(root, func(c *cobra.Command) {
		c.Flags().SetOutput(stderrOf{c})
	})
}

// stderrOf writes to the command's stderr as it is when written to: the
// streams are set by Execute, after the tree is built.
type stderrOf struct{ c *cobra.Command }

func (s stderrOf) Write(p []byte) (int, error) { return s.c.ErrOrStderr().Write(p) }
