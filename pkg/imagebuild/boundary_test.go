package imagebuild

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// stagePackages are the pipeline stages; a library below them must import
// none.
var stagePackages = []string{"render", "kmod", "osimage", "signing", "rollout", "bootimage", "reproduce", "report"}

// TestBuildLibrariesImportNoStage lists, with `go list -deps`, everything
// the libraries the stages share are built from, and fails naming the
// pair when one reaches a stage (test/layout checks stage against stage).
func TestBuildLibrariesImportNoStage(t *testing.T) {
	const mod = "github.com/kiln-dev/kiln/pkg/"
	cases := []struct {
		pkg       string
		forbidden []string
	}{
		{"buildah", stagePackages},
		{"imagebuild", stagePackages},
		{"kmodbuild", stagePackages},
		{"sign", stagePackages},
		{"modsign", stagePackages},
		{"moduleday0", stagePackages},
		{"mcrender", stagePackages},
	}
	for _, c := range cases {
		t.Run(c.pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", mod+c.pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", c.pkg, err)
			}
			deps := strings.Fields(string(out))
			// A listing without the registry client every builder uses
			// would pass for the wrong reason.
			if !slices.Contains(deps, mod+"registry") {
				t.Fatalf("go list -deps %s does not list pkg/registry: %d packages", c.pkg, len(deps))
			}
			for _, s := range c.forbidden {
				if s != c.pkg && slices.Contains(deps, mod+s) {
					t.Errorf("pkg/%s imports the stage pkg/%s, directly or through a library", c.pkg, s)
				}
			}
		})
	}
}
