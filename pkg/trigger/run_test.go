package trigger

import (
	"context"
	"strings"
	"testing"
)

// TestRunRefusesADirectorySource: the cluster trigger never runs local
// mode itself (cmd/ sends --source dir: to pkg/localrun), and says so
// rather than starting a manager for a folder.
func TestRunRefusesADirectorySource(t *testing.T) {
	o := DefaultOptions()
	o.Source, o.Output = "dir:"+t.TempDir(), t.TempDir()
	err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "local mode runs through pkg/localrun") {
		t.Fatalf("Run with %s: %v, want the local-mode refusal", o.Source, err)
	}
}
