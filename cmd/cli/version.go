package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kiln-dev/kiln/pkg/step"
)

// versionString is what `version` and `--version` print: the module
// version and the VCS revision and time Go stamped into the binary, and
// the Tekton API the results are written for.
func versionString() string {
	version, revision, vcsTime, modified := "(devel)", "unknown", "unknown", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				vcsTime = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = " (modified)"
				}
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "version:   %s\n", version)
	fmt.Fprintf(&b, "revision:  %s%s\n", revision, modified)
	fmt.Fprintf(&b, "time:      %s\n", vcsTime)
	fmt.Fprintf(&b, "results:   %s\n", step.ResultsAPIVersion)
	fmt.Fprintf(&b, "go:        %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return b.String()
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, VCS revision and time, and the results schema",
		Long: `Prints the module version and the VCS revision and commit time from the binary's build info,
and the Tekton API version the results are written for (tekton.dev/v1 Task results). The same
text as --version.`,
		Example: `  kiln-steps version
  trigger --version`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(c.OutOrStdout(), versionString())
			return err
		},
	}
}
