package imagebuildcmd_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/cmd/cli"
	"github.com/kiln-dev/kiln/cmd/cli/imagebuildcmd"
	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// flagsOf lists each flag of fs as name, shorthand, default and usage.
func flagsOf(fs *pflag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(f *pflag.Flag) {
		out = append(out, strings.Join([]string{f.Name, f.Shorthand, f.DefValue, f.Usage}, " | "))
	})
	return out
}

// TestRootTakesKilnStepsImageBuildFlags: kiln-image-build's root has
// exactly the flags (names, defaults, help) of kiln-steps image-build,
// and the same persistent -v/--verbose, so a Task can call either.
func TestRootTakesKilnStepsImageBuildFlags(t *testing.T) {
	steps := cli.NewSteps()
	sub, _, err := steps.Find([]string{"image-build"})
	if err != nil {
		t.Fatal(err)
	}
	root := imagebuildcmd.NewRoot()
	if diff := cmp.Diff(flagsOf(sub.Flags()), flagsOf(root.Flags())); diff != "" {
		t.Errorf("flags differ (-kiln-steps image-build +kiln-image-build):\n%s", diff)
	}
	if diff := cmp.Diff(flagsOf(steps.PersistentFlags()), flagsOf(root.PersistentFlags())); diff != "" {
		t.Errorf("persistent flags differ (-kiln-steps +kiln-image-build):\n%s", diff)
	}
}

// TestRootRefusesMissingFlagsNamingTheBinary: a run without the required
// flags is a usage error (exit 2) that names kiln-image-build and each
// missing flag, before any I/O.
func TestRootRefusesMissingFlagsNamingTheBinary(t *testing.T) {
	var out, errw bytes.Buffer
	code := cli.Execute(context.Background(), imagebuildcmd.NewRoot(), []string{"--pool", "worker"}, &out, &errw)
	want := "kiln-image-build: --work is required; --results-dir is required; --base is required; --repository is required\n" +
		"Run 'kiln-image-build --help' for usage.\n"
	if code != exitcode.ExitUsage || errw.String() != want {
		t.Errorf("exit %d, stderr %q; want exit %d, stderr %q", code, errw.String(), exitcode.ExitUsage, want)
	}
}
