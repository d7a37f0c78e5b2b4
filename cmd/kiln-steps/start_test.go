package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/vincent-petithory/dataurl"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/test/env"
)

// initAllocBudget is what one kiln package's initialization may allocate
// (objects, as GODEBUG=inittrace=1 counts them). Every subcommand pays
// every package's init: a compiled pattern, a scheme or a validator built
// at init costs each step's start, so they are built on first use.
const initAllocBudget = 100

// TestKilnPackageInitsAllocateLittle runs the built binary with
// GODEBUG=inittrace=1 and fails naming each kiln package whose init
// allocates more than initAllocBudget objects.
func TestKilnPackageInitsAllocateLittle(t *testing.T) {
	bin := env.BuildBinary(t, "./cmd/kiln-steps")
	inits := initTrace(t, bin, "version")
	if _, ok := inits["github.com/kiln-dev/kiln/pkg/osimage"]; !ok {
		t.Fatalf("inittrace names no pkg/osimage init; traced %d packages", len(inits))
	}
	for pkg, allocs := range inits {
		if strings.HasPrefix(pkg, "github.com/kiln-dev/kiln/") && allocs > initAllocBudget {
			t.Errorf("%s: init allocates %d objects, over the budget of %d: build it on first use (sync.OnceValue)", pkg, allocs, initAllocBudget)
		}
	}
}

// initTrace runs bin with args and GODEBUG=inittrace=1 and returns the
// allocations of each package's init, keyed by import path.
func initTrace(t *testing.T, bin string, args ...string) map[string]int {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.Bytes())
	}
	// init <package> @<t> ms, <clock> ms clock, <bytes> bytes, <allocs> allocs
	out := map[string]int{}
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[10] != "allocs" {
			continue
		}
		n, err := strconv.Atoi(f[9])
		if err != nil {
			t.Fatalf("inittrace line %q: allocs: %v", sc.Text(), err)
		}
		out[f[1]] += n
	}
	return out
}

// BenchmarkStart measures kiln-steps as the Tasks run it, a fresh process
// per step, interleaving in each round the reference /bin/true, the
// binary's `version` (process start: runtime and package init, no work)
// and a config-only `image-build` (start plus the build: a tiny stand-in
// base on a local docker-registry, one layer appended and pushed), then
// the same two runs of kiln-image-build, the image-build stage linked
// alone. It reports each as ms per run, and the fastest run of each;
// image-build's goal is 15 ms.
func BenchmarkStart(b *testing.B) {
	bin := env.BuildBinary(b, "./cmd/kiln-steps")
	alone := env.BuildBinary(b, "./cmd/kiln-image-build")
	reg := env.StartRegistry(b, env.RegistryOptions{})
	base := reg.Ref("start/base:1")
	if err := pushStandInBase(b, base); err != nil {
		b.Fatal(err)
	}
	var tTrue, tVersion, tBuild, tAloneVersion, tAloneBuild run
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		build, _ := imageBuildCommand(b, reg.Host, base, fmt.Sprintf("change %d at %d\n", i, time.Now().UnixNano()), bin, "image-build")
		aloneBuild, _ := imageBuildCommand(b, reg.Host, base, fmt.Sprintf("alone %d at %d\n", i, time.Now().UnixNano()), alone)
		b.StartTimer()
		tTrue.add(timeRun(b, exec.Command("/bin/true")))
		tVersion.add(timeRun(b, exec.Command(bin, "version")))
		tBuild.add(timeRun(b, build))
		tAloneVersion.add(timeRun(b, exec.Command(alone, "version")))
		tAloneBuild.add(timeRun(b, aloneBuild))
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / float64(time.Millisecond) }
	b.ReportMetric(ms(tTrue.wall), "true-ms/op")
	b.ReportMetric(ms(tVersion.wall), "version-ms/op")
	b.ReportMetric(ms(tBuild.wall), "image-build-ms/op")
	b.ReportMetric(ms(tAloneVersion.wall), "alone-version-ms/op")
	b.ReportMetric(ms(tAloneBuild.wall), "alone-image-build-ms/op")
	// CPU time (user+system) of the process itself: what a start costs
	// when other work shares the cores, less sensitive to load than wall.
	b.ReportMetric(ms(tVersion.cpu), "version-cpu-ms/op")
	b.ReportMetric(ms(tBuild.cpu), "image-build-cpu-ms/op")
	b.ReportMetric(ms(tAloneVersion.cpu), "alone-version-cpu-ms/op")
	b.ReportMetric(ms(tAloneBuild.cpu), "alone-image-build-cpu-ms/op")
	// The fastest run of each: the start when the machine's other load
	// leaves the cores alone.
	msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(msOf(tTrue.min), "true-min-ms")
	b.ReportMetric(msOf(tVersion.min), "version-min-ms")
	b.ReportMetric(msOf(tBuild.min), "image-build-min-ms")
	b.ReportMetric(msOf(tAloneVersion.min), "alone-version-min-ms")
	b.ReportMetric(msOf(tAloneBuild.min), "alone-image-build-min-ms")
	b.ReportMetric(float64(tVersion.wall)/float64(tTrue.wall), "version/true")
	b.ReportMetric(float64(tBuild.wall)/float64(tVersion.wall), "image-build/version")
	b.ReportMetric(float64(tAloneBuild.wall)/float64(tBuild.wall), "alone/kiln-steps")
}

// TestKilnImageBuildBuildsWhatKilnStepsBuilds runs kiln-steps image-build
// and kiln-image-build on the same rendered config and base and fails
// unless both write the same IMAGE_URL and IMAGE_DIGEST: the standalone
// binary is the same stage, not a second implementation.
func TestKilnImageBuildBuildsWhatKilnStepsBuilds(t *testing.T) {
	steps := env.BuildBinary(t, "./cmd/kiln-steps")
	alone := env.BuildBinary(t, "./cmd/kiln-image-build")
	reg := env.StartRegistry(t, env.RegistryOptions{})
	base := reg.Ref("start/base:1")
	if err := pushStandInBase(t, base); err != nil {
		t.Fatal(err)
	}
	results := map[string]map[string]string{}
	for name, argv := range map[string][]string{"kiln-steps": {steps, "image-build"}, "kiln-image-build": {alone}} {
		cmd, dir := imageBuildCommand(t, reg.Host, base, "same motd\n", argv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
		}
		results[name] = map[string]string{}
		for _, r := range []string{"IMAGE_URL", "IMAGE_DIGEST"} {
			v, err := os.ReadFile(filepath.Join(dir, r))
			if err != nil {
				t.Fatal(err)
			}
			results[name][r] = string(v)
		}
	}
	if !strings.HasPrefix(results["kiln-steps"]["IMAGE_DIGEST"], "sha256:") {
		t.Fatalf("kiln-steps wrote IMAGE_DIGEST %q, not a digest", results["kiln-steps"]["IMAGE_DIGEST"])
	}
	if diff := cmp.Diff(results["kiln-steps"], results["kiln-image-build"]); diff != "" {
		t.Errorf("results differ (-kiln-steps +kiln-image-build):\n%s", diff)
	}
}

// run is the time processes took, start to exit (wall), and the CPU time
// they used (user+system); min is the fastest single run's wall time, the
// least disturbed by other work on a shared machine.
type run struct{ wall, cpu, min time.Duration }

func (r *run) add(o run) {
	r.wall += o.wall
	r.cpu += o.cpu
	if r.min == 0 || o.wall < r.min {
		r.min = o.wall
	}
}

// timeRun runs cmd and returns how long the process took.
func timeRun(b *testing.B, cmd *exec.Cmd) run {
	b.Helper()
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return run{wall: d, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
}

// pushStandInBase pushes an empty image plus the stand-in kernel, the
// smallest base the node import check accepts.
func pushStandInBase(t testing.TB, ref string) error {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	return remote.Write(r, env.WithKernel(t, empty.Image))
}

// imageBuildCommand writes a fresh workspace whose rendered config writes
// motd and returns the image-build command for it, run as argv (the
// binary, then its subcommand if any), and its results folder.
func imageBuildCommand(t testing.TB, host, base, motd string, argv ...string) (*exec.Cmd, string) {
	t.Helper()
	work, results := t.TempDir(), t.TempDir()
	raw, err := json.Marshal(renderedMotd(t, motd))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(work, "render"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "render", "rendered.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(argv[1:len(argv):len(argv)], "--pool", "worker", "--work", work, "--results-dir", results,
		"--base", base, "--repository", host+"/start/kiln", "--insecure-registry", host)
	return exec.Command(argv[0], args...), results
}

// renderedMotd is a rendered MachineConfig, as render writes it, holding
// one file: /etc/motd.
func renderedMotd(t testing.TB, motd string) *mcfgv1.MachineConfig {
	t.Helper()
	mode, src := 0o644, dataurl.EncodeBytes([]byte(motd))
	cfg := igntypes.Config{Ignition: igntypes.Ignition{Version: "3.5.0"}, Storage: igntypes.Storage{Files: []igntypes.File{{
		Node:          igntypes.Node{Path: "/etc/motd"},
		FileEmbedded1: igntypes.FileEmbedded1{Contents: igntypes.Resource{Source: &src}, Mode: &mode},
	}}}}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mc := &mcfgv1.MachineConfig{Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}, KernelType: "default"}}
	mc.APIVersion = mcfgv1.GroupVersion.String()
	mc.Kind = "MachineConfig"
	mc.Name = "rendered-worker-start"
	return mc
}
