package render

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	workspace "github.com/kiln-dev/kiln/pkg/work"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/step"
)

// runStep runs render with its default options changed by set, as the
// command line does: Validate, then Run; the error decides the exit code.
// (cmd/cli's tests cover the flags themselves.)
func runStep(t *testing.T, set func(o *StepOptions)) (int, string, string) {
	t.Helper()
	o := DefaultStepOptions()
	set(o)
	var out, errb bytes.Buffer
	err := o.Validate()
	if err == nil {
		err = o.Run(context.Background(), step.Streams{Out: &out, Err: &errb})
	}
	if err != nil {
		errb.WriteString(err.Error())
	}
	return exitcode.CodeOf(err), out.String(), errb.String()
}

func dirOpts(src, pool, work, results string) func(o *StepOptions) {
	return func(o *StepOptions) { o.Source, o.Pool, o.Work, o.ResultsDir = src, pool, work, results }
}

// The acceptance criterion: render --source dir:testdata/<case> writes
// rendered.json with the expected name, inputs.json and the results.
func TestStepWritesOutputs(t *testing.T) {
	work, results := t.TempDir(), t.TempDir()
	code, out, errs := runStep(t, dirOpts("dir:testdata/golden/custom-pool-over-worker", "infra", work, results))
	if code != exitcode.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	golden, err := os.ReadFile("testdata/golden/custom-pool-over-worker/results.golden")
	if err != nil {
		t.Fatal(err)
	}
	var mc mcfgv1.MachineConfig
	b, err := os.ReadFile(filepath.Join(work, "render", "rendered.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &mc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(golden), "RENDERED_NAME="+mc.Name+"\n") {
		t.Errorf("rendered.json names %s; results.golden says:\n%s", mc.Name, golden)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(golden)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got, err := os.ReadFile(filepath.Join(results, k))
		if err != nil || string(got) != v {
			t.Errorf("result %s = %q (%v), want %q", k, got, err, v)
		}
	}
	var inputs []workspace.Input
	b, _ = os.ReadFile(filepath.Join(work, "render", "inputs.json"))
	if err := json.Unmarshal(b, &inputs); err != nil || len(inputs) != 5 {
		t.Errorf("inputs.json: %d inputs (%v), want pool + 3 MCs + ConfigMap", len(inputs), err)
	}
	// Progress names each input MC in merge order: worker's first.
	want := []string{"input 1: MachineConfig 00-worker", "input 2: MachineConfig 99-worker-ssh", "input 3: MachineConfig 50-infra-kubelet"}
	last := -1
	for _, w := range want {
		i := strings.Index(out, w)
		if i <= last {
			t.Errorf("progress lacks %q in order:\n%s", w, out)
		}
		last = i
	}
}

// A failed render writes nothing: no rendered.json, no results.
func TestStepFailsClosed(t *testing.T) {
	work, results := t.TempDir(), t.TempDir()
	code, _, errs := runStep(t, dirOpts("dir:testdata/bad/mode-04755", "worker", work, results))
	if code != exitcode.ExitInputRejected || !strings.Contains(errs, `MachineConfig "10-bad": spec.config: storage.files[0] (/usr/local/bin/suid): mode 04755`) {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, dir := range []string{filepath.Join(work, "render"), results} {
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("%s holds %d files after a failed render", dir, len(entries))
		}
	}
}

func TestStepUsageErrors(t *testing.T) {
	for _, c := range []struct{ source, pool, want string }{
		{"dir:x", "", "--pool is required"},
		{"git:x", "worker", `--source "git:x"`},
		{"dir:testdata", "a/b", `--pool "a/b"`},
	} {
		if code, _, errs := runStep(t, dirOpts(c.source, c.pool, t.TempDir(), t.TempDir())); code != exitcode.ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%+v: exit %d (%s), want %d naming %s", c, code, errs, exitcode.ExitUsage, c.want)
		}
	}
}

// TestStepRendersForAnotherRelease: with --os-image, --extensions-image
// and --release-version (an upgrade-ahead run's target release), the
// rendered config and BASE_IMAGE carry that release's images and version,
// not the payload ConfigMap's; bad values are usage errors naming the flag.
func TestStepRendersForAnotherRelease(t *testing.T) {
	const osImage = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:7777777777777777777777777777777777777777777777777777777777777777"
	const extImage = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:8888888888888888888888888888888888888888888888888888888888888888"
	work, results := t.TempDir(), t.TempDir()
	code, _, errs := runStep(t, func(o *StepOptions) {
		dirOpts("dir:testdata/golden/custom-pool-over-worker", "infra", work, results)(o)
		o.Release = Release{OSImage: osImage, ExtensionsImage: extImage, Version: "4.19.3"}
	})
	if code != exitcode.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var mc mcfgv1.MachineConfig
	b, err := os.ReadFile(filepath.Join(work, "render", "rendered.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &mc); err != nil {
		t.Fatal(err)
	}
	base, _ := os.ReadFile(filepath.Join(results, "BASE_IMAGE"))
	got := map[string]string{"osImageURL": mc.Spec.OSImageURL, "extensions": mc.Spec.BaseOSExtensionsContainerImage,
		"release": mc.Annotations["machineconfiguration.openshift.io/release-image-version"], "BASE_IMAGE": string(base)}
	want := map[string]string{"osImageURL": osImage, "extensions": extImage, "release": "4.19.3", "BASE_IMAGE": osImage}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rendered for release 4.19.3 (-want +got):\n%s", d)
	}
	for _, c := range []struct {
		rel  Release
		want string
	}{
		{Release{OSImage: "os:latest"}, `--os-image "os:latest": want a fully qualified image reference`},
		{Release{ExtensionsImage: "quay.io/x@sha256:12"}, `--extensions-image "quay.io/x@sha256:12"`},
		{Release{Version: "4.19"}, `--release-version "4.19": want a semantic version`},
	} {
		code, _, errs := runStep(t, func(o *StepOptions) {
			dirOpts("dir:testdata/golden/custom-pool-over-worker", "infra", t.TempDir(), t.TempDir())(o)
			o.Release = c.rel
		})
		if code != exitcode.ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%+v: exit %d (%s), want %d naming %s", c.rel, code, errs, exitcode.ExitUsage, c.want)
		}
	}
}
