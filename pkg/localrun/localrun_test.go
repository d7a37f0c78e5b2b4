package localrun

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/examples"
	"github.com/kiln-dev/kiln/pkg/trigger"
	"github.com/kiln-dev/kiln/test/env"
)

// TestRunLocal is the embedded default on the sample cluster, for real:
// the real kiln-steps, the repository's Tasks and node-image Pipeline on
// the local executor, a real registry. worker and master run end to end
// (render, image build, cosign sign and verify, the osImageURL MC, boot
// images for worker) and the GitOps change lands in the output; a second
// run changes nothing and says so. The infra pool (a realtime kernel and
// an extension on a base with no shell, and the kmod build) is left out:
// examples/ covers its stages, and its image build needs the buildah path
// the locally made base cannot serve (examples/cluster/README.md, Limits).
func TestRunLocal(t *testing.T) {
	steps := env.BuildBinary(t, "./cmd/kiln-steps")
	reg := env.StartRegistry(t, env.RegistryOptions{})
	images, err := examples.Images()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := examples.Push(context.Background(), reg.Host, images); err != nil {
		t.Fatal(err)
	}
	src := sampleWithout(t, reg.Host, "pools/infra.yaml", "kmod")
	out := t.TempDir()
	o := trigger.Options{Source: "dir:" + src, Once: true, Output: out,
		Local: trigger.LocalOptions{Registry: reg.Host, StepBinary: steps, Root: env.RepoRoot(), BootImagePools: []string{"worker"}}}

	var log bytes.Buffer
	if err := runLocal(context.Background(), o, &log); err != nil {
		t.Fatalf("first run: %v\n%s", err, log.String())
	}
	text := log.String()
	// The node check's verdict per pool: the sample's kubelet wrapper in
	// /usr/local (/var on CoreOS) reaches an upgraded node from MCO's
	// daemon, not from the image.
	for _, want := range []string{"report       Succeeded", "MACHINESETS PATCHED", "node check worker: pass (",
		"node check master: pass (", "rendered files as rendered", "/var/usrlocal/bin/kubenswrapper (under /var"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	rows := summaryRows(text)
	if rows["worker"] == nil || rows["worker"][3] != "Completed" || rows["worker"][6] != "true" || rows["worker"][7] != "2" ||
		rows["master"] == nil || rows["master"][3] != "Completed" || !strings.HasPrefix(rows["master"][5], "sha256:") {
		t.Fatalf("summary rows %v\n%s", rows, text)
	}
	for _, f := range []string{"gitops/rollout/99-kiln-worker-os-image.yaml", "gitops/rollout/99-kiln-master-os-image.yaml",
		"gitops/rendered/worker.json", "state.json", "keys/cosign/cosign.pub"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("output lacks %s", f)
		}
	}
	mc, _ := os.ReadFile(filepath.Join(out, "gitops/rollout/99-kiln-worker-os-image.yaml"))
	if !strings.Contains(string(mc), "osImageURL: "+reg.Host+"/kiln/node-image-worker@sha256:") {
		t.Errorf("worker's MachineConfig:\n%s", mc)
	}
	sets, _ := filepath.Glob(filepath.Join(out, "gitops/bootimages/manifests/machinesets/*.yaml"))
	if len(sets) != 2 {
		t.Errorf("patched MachineSets in the GitOps change: %v", sets)
	}
	// Both pools build on the payload's OS image: image-build's node
	// import cache, kept beside the runs, holds that one base.
	if ents, err := os.ReadDir(filepath.Join(out, cacheDir, "nodeimport")); err != nil || len(ents) != 1 {
		t.Errorf("node import cache holds %v (%v), want the one base both pools build on", ents, err)
	}

	log.Reset()
	if err := runLocal(context.Background(), o, &log); err != nil {
		t.Fatalf("second run: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "nothing to do") || strings.Contains(log.String(), "PipelineRun") {
		t.Fatalf("second run with no change:\n%s", log.String())
	}
}

// sampleWithout copies examples/cluster with the registry host replaced
// and the given files or folders left out.
func sampleWithout(t *testing.T, host string, drop ...string) string {
	t.Helper()
	return sampleWith(t, strings.NewReplacer(examples.Registry, host), drop...)
}

// sampleWith copies examples/cluster with r applied to every file and the
// given files or folders left out.
func sampleWith(t *testing.T, r *strings.Replacer, drop ...string) string {
	t.Helper()
	from := filepath.Join(env.RepoRoot(), "examples", "cluster")
	dir := t.TempDir()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		for _, x := range drop {
			if rel == x {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), []byte(r.Replace(string(b))), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// summaryRows reads the final table: pool → its columns.
func summaryRows(s string) map[string][]string {
	rows := map[string][]string{}
	in := false
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "POOL":
			in = true
		case in && len(f) >= 8:
			rows[f[0]] = f
		}
	}
	return rows
}
