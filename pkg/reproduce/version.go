package reproduce

import "runtime/debug"

// kilnVersion names this kiln for a message: the module version and VCS
// revision Go stamped into the binary.
func kilnVersion() string {
	version, revision := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = " " + s.Value
			}
		}
	}
	return version + revision
}
