package step

import (
	"os"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imageref"
)

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }

// Validation names every problem in one error.
func TestValidateReportsEveryMissingFlag(t *testing.T) {
	o := Options{}
	err := o.Validate()
	if exitcode.CodeOf(err) != exitcode.ExitUsage || !strings.Contains(err.Error(), "--work is required") || !strings.Contains(err.Error(), "--pool is required") {
		t.Errorf("Validate() = %v, want one usage error naming --work and --pool", err)
	}
	if err := imageref.RequireDigestRef("image", "quay.io/x/os:latest"); err == nil || !strings.Contains(err.Error(), "--image") {
		t.Errorf("a tag passed: %v", err)
	}
	if err := imageref.RequireDigestRef("image", "quay.io/x/os@sha256:"+strings.Repeat("a", 64)); err != nil {
		t.Error(err)
	}
}
