package osimage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// TestImageBuildStepCacheDir: with --cache-dir, image-build stores its
// base's node import state in the folder and gives the results of a run
// without it; a --cache-dir it cannot use (a file, whose name holds an
// escape sequence) is one escaped warning line on stderr, and the step
// still succeeds with the same results.
func TestImageBuildStepCacheDir(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	imagetest.PushBase(t, reg.Host, "base/os:1", 2)
	mc := imagetest.RenderedMC(t, "rendered-worker-abc", imagetest.SampleConfig(t, "hi"))
	run := func(cacheDir string) (map[string]string, string) {
		work, results := t.TempDir(), t.TempDir()
		writeRendered(t, work, mc)
		o := &BuildOptions{Options: step.Options{Work: work, ResultsDir: results, Pool: "worker"},
			RegistryOptions: registry.RegistryOptions{Insecure: []string{reg.Host}},
			Base:            reg.Host + "/base/os:1", Repository: reg.Host + "/kiln/os", Source: imagebuild.DefaultSource, CacheDir: cacheDir}
		var out, errw bytes.Buffer
		if err := o.Run(context.Background(), step.Streams{Out: &out, Err: &errw}); err != nil {
			t.Fatalf("%v\n%s%s", err, out.String(), errw.String())
		}
		got := map[string]string{}
		for _, n := range []string{"IMAGE_DIGEST", "NODE_CHECK"} {
			v, err := os.ReadFile(filepath.Join(results, n))
			if err != nil {
				t.Fatal(err)
			}
			got[n] = string(v)
		}
		return got, errw.String()
	}
	want, _ := run("")
	cache := filepath.Join(t.TempDir(), "cache")
	for i := range 2 {
		got, stderr := run(cache)
		if got["IMAGE_DIGEST"] != want["IMAGE_DIGEST"] || got["NODE_CHECK"] != want["NODE_CHECK"] || stderr != "" {
			t.Errorf("run %d with --cache-dir: %v, stderr %q; without: %v", i, got, stderr, want)
		}
	}
	if ents, err := os.ReadDir(filepath.Join(cache, "nodeimport")); err != nil || len(ents) != 1 {
		t.Errorf("cache folder holds %v (%v), want one entry", ents, err)
	}
	file := filepath.Join(t.TempDir(), "cache\x1b[2J")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, stderr := run(file)
	if got["IMAGE_DIGEST"] != want["IMAGE_DIGEST"] || got["NODE_CHECK"] != want["NODE_CHECK"] {
		t.Errorf("with an unusable --cache-dir: %v, want %v", got, want)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "warning: node import cache: ") || strings.ContainsRune(l, 0x1b) || !strings.Contains(l, `cache\x1b[2J`) {
			t.Errorf("stderr line %q, want an escaped warning naming the folder", l)
		}
	}
	if len(lines) > 2 {
		t.Errorf("stderr %q: more than a warning for the read and one for the write", stderr)
	}
}
