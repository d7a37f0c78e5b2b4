package base

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kiln-dev/kiln/pkg/step"
)

// BuildVersion is what `version` prints: the module version and the VCS
// revision and time Go stamped into the binary, and the Tekton API the
// results are written for. Its JSON is `version -o json`.
type BuildVersion struct {
	Version  string `json:"version"`
	Revision string `json:"revision"`
	Modified bool   `json:"modified"`
	Time     string `json:"time"`
	Results  string `json:"results"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// ReadBuildVersion reads the version Go stamped into the running binary.
func ReadBuildVersion() BuildVersion {
	v := BuildVersion{Version: "(devel)", Revision: "unknown", Time: "unknown", Results: step.ResultsAPIVersion,
		Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// versionString is what `version` and `--version` print as text.
func versionString() string {
	v := ReadBuildVersion()
	modified := ""
	if v.Modified {
		modified = " (modified)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "version:   %s\n", v.Version)
	fmt.Fprintf(&b, "revision:  %s%s\n", v.Revision, modified)
	fmt.Fprintf(&b, "time:      %s\n", v.Time)
	fmt.Fprintf(&b, "results:   %s\n", v.Results)
	fmt.Fprintf(&b, "go:        %s %s\n", v.Go, v.Platform)
	return b.String()
}

func newVersionCommand() *cobra.Command {
	format := step.FormatText
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version, VCS revision and time, and the results schema",
		Long: `Prints the module version and the VCS revision and commit time from the binary's build info,
and the Tekton API version the results are written for (tekton.dev/v1 Task results). The same
text as --version; -o json prints the same fields as one JSON object.`,
		Example: `  kiln-steps version
  kiln-trigger --version
  kiln-steps version -o json`,
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			return AsUsage(step.ValidateFormat(format))
		},
		RunE: func(c *cobra.Command, _ []string) error {
			if format == step.FormatJSON {
				b, err := json.MarshalIndent(ReadBuildVersion(), "", "  ")
				if err != nil {
					return err
				}
				_, err = c.OutOrStdout().Write(append(b, '\n'))
				return err
			}
			_, err := fmt.Fprint(c.OutOrStdout(), versionString())
			return err
		},
	}
	BindFormat(c.Flags(), &format)
	return c
}
