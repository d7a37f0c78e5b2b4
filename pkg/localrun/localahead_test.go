package localrun

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/examples"
	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/trigger"
	"github.com/kiln-dev/kiln/test/env"
)

// TestPlanAheadRunsEachPoolOnEachSelectedTargetOnce: every enabled pool
// gets a run per selected target; a target state.json holds under the
// same upgrade-ahead fingerprint is done (Ready, no run); a pool whose
// inputs moved, or a target state holds for other inputs, runs again.
func TestPlanAheadRunsEachPoolOnEachSelectedTargetOnce(t *testing.T) {
	cv := &configv1.ClusterVersion{}
	cv.Name = payload.ClusterVersionName
	cv.Status.Desired = configv1.Release{Version: "4.20.3", Image: "r.example/release@sha256:" + strings.Repeat("a", 64)}
	z := configv1.Release{Version: "4.20.4", Image: "r.example/release@sha256:" + strings.Repeat("b", 64)}
	y := configv1.Release{Version: "4.21.0", Image: "r.example/release@sha256:" + strings.Repeat("c", 64)}
	cv.Status.AvailableUpdates = []configv1.Release{z, y}
	worker := PoolPlan{Pool: "worker", Fingerprint: trigger.Fingerprint{Sum: "fw"}}
	master := PoolPlan{Pool: "master", Fingerprint: trigger.Fingerprint{Sum: "fm"}}
	zt := payload.Target{Version: z.Version, Image: z.Image}
	st := State{Ahead: map[string]AheadState{
		// worker's z-stream target was prepared on these inputs ...
		"worker/4.20.4": {Pool: "worker", Release: "4.20.4", Fingerprint: trigger.AheadSum("fw", zt), Run: "kiln-worker-ahead-4.20.4-x"},
		// ... master's on inputs it no longer has.
		"master/4.20.4": {Pool: "master", Release: "4.20.4", Fingerprint: trigger.AheadSum("old", zt), Run: "kiln-master-ahead-4.20.4-y"},
	}}
	type row struct {
		Pool, Release string
		Done          bool
	}
	for _, tc := range []struct {
		name string
		sel  payload.Selection
		want []row
	}{
		{name: "default: z-stream and y-stream", sel: payload.DefaultSelection, want: []row{
			{"worker", "4.20.4", true}, {"worker", "4.21.0", false}, {"master", "4.20.4", false}, {"master", "4.21.0", false}}},
		{name: "z-stream only", sel: payload.Selection{ZStream: true}, want: []row{
			{"worker", "4.20.4", true}, {"master", "4.20.4", false}}},
		{name: "none", sel: payload.Selection{}, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plans, _ := planAhead(cv, tc.sel, []PoolPlan{worker, master}, st)
			var got []row
			for _, a := range plans {
				got = append(got, row{a.pool, a.target.Version, a.done})
				if a.done && !strings.HasPrefix(a.line, trigger.StatusReady+": PipelineRun kiln-worker-ahead-4.20.4-x") {
					t.Errorf("done plan %s/%s: line %q", a.pool, a.target.Version, a.line)
				}
				if want := trigger.AheadRunName(a.pool, a.target.Version, a.sum); a.run != want {
					t.Errorf("run %q, want %q", a.run, want)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("plans (-want +got):\n%s", d)
			}
		})
	}
}

// TestRunLocalPreparesOfferedReleasesWithNoRollout: the folder's
// ClusterVersion offers a z-stream (a real release image on a new base)
// and a y-stream whose release names an OS image the registry does not
// have. Local mode runs the pools' own runs, then an upgrade-ahead run per
// pool and release with the rollout and boot images skipped, and prints
// per pool and release Ready, or NotReady naming the failed stage and its
// cause. The GitOps change is the pools' own runs' alone. A second
// invocation runs only the failed upgrade-ahead runs again, and prints the
// same readiness.
func TestRunLocalPreparesOfferedReleasesWithNoRollout(t *testing.T) {
	steps := env.BuildBinary(t, "./cmd/kiln-steps")
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := context.Background()
	images, err := examples.Images()
	if err != nil {
		t.Fatal(err)
	}
	refs, err := examples.Push(ctx, reg.Host, images)
	if err != nil {
		t.Fatal(err)
	}
	ext := ""
	for _, r := range refs {
		if strings.HasPrefix(r, reg.Host+strings.TrimPrefix(examples.ExtensionsRepository, examples.Registry)+"@") {
			ext = r
		}
	}
	next, err := examples.PushNextBase(ctx, reg.Host, "io.kiln.test.release", "4.20.4")
	if err != nil {
		t.Fatal(err)
	}
	// No pool here has a kernel module: any image by digest stands for the
	// driver toolkit the release must name.
	release := env.PushRelease(t, reg.Host+"/openshift/release:4.20.4", "4.20.4", map[string]string{
		payload.TagRHELCoreOS: next, payload.TagRHELCoreOSExtensions: ext, payload.TagDriverToolkit: ext})
	gone := reg.Host + "/openshift/rhcos@sha256:" + strings.Repeat("0", 64)
	broken := env.PushRelease(t, reg.Host+"/openshift/release:4.21.0", "4.21.0", map[string]string{
		payload.TagRHELCoreOS: gone, payload.TagRHELCoreOSExtensions: ext, payload.TagDriverToolkit: ext})
	offers := "  availableUpdates:\n  - version: 4.20.4\n    image: " + release + "\n  - version: 4.21.0\n    image: " + broken
	src := sampleWith(t, strings.NewReplacer(examples.Registry, reg.Host, "  availableUpdates: null", offers), "pools/infra.yaml", "kmod")
	out := t.TempDir()
	o := trigger.Options{Source: "dir:" + src, Once: true, Output: out, Namespace: trigger.DefaultNamespace,
		Local: trigger.LocalOptions{Registry: reg.Host, StepBinary: steps, Root: env.RepoRoot(), BootImagePools: []string{"worker"}}}

	var log bytes.Buffer
	if err := runLocal(ctx, o, &log); err != nil {
		t.Fatalf("first run: %v\n%s", err, log.String())
	}
	text := log.String()
	runs := rowsByRun(text)
	ready := readinessRows(text)
	for _, pool := range []string{"worker", "master"} {
		var own, ahead []string
		for _, cols := range runs {
			if strings.HasPrefix(cols[2], "kiln-"+pool+"-ahead-4.20.4-") {
				ahead = cols
			} else if cols[0] == pool && cols[1] != trigger.TriggerUpgradeAhead {
				own = cols
			}
		}
		if own == nil || ahead == nil {
			t.Fatalf("pool %s: summary rows %v\n%s", pool, runs, text)
		}
		// The ahead run built, signed and verified an image of its own (on
		// the next base), and skipped the rollout: Completed, not Succeeded.
		if ahead[3] != "Completed" || ahead[6] != "true" || ahead[5] == own[5] || !strings.HasPrefix(ahead[5], "sha256:") {
			t.Errorf("pool %s: upgrade-ahead row %v, own run %v", pool, ahead, own)
		}
		if got := ready[pool+"/4.20.4"]; !strings.HasPrefix(got, trigger.StatusReady+": PipelineRun "+ahead[2]+" built, signed and verified") {
			t.Errorf("pool %s, 4.20.4: readiness %q\n%s", pool, got, text)
		}
		if got := ready[pool+"/4.21.0"]; !strings.HasPrefix(got, trigger.StatusNotReady+": ") || !strings.Contains(got, gone) ||
			!strings.Contains(got, "(PipelineRun kiln-"+pool+"-ahead-4.21.0-") {
			t.Errorf("pool %s, 4.21.0: readiness %q, want NotReady naming the missing OS image\n%s", pool, got, text)
		}
		// The GitOps change names the pool's own image only.
		mc, err := os.ReadFile(filepath.Join(out, "gitops/rollout/99-kiln-"+pool+"-os-image.yaml"))
		if err != nil || !strings.Contains(string(mc), "@"+own[5]) || strings.Contains(string(mc), ahead[5]) {
			t.Errorf("pool %s: GitOps MachineConfig (%v):\n%s", pool, err, mc)
		}
	}
	if n := strings.Count(text, "running kiln-"); n != 6 {
		t.Errorf("%d runs, want 2 own and 4 upgrade-ahead runs:\n%s", n, text)
	}

	log.Reset()
	if err := runLocal(ctx, o, &log); err != nil {
		t.Fatalf("second run: %v\n%s", err, log.String())
	}
	again := log.String()
	if n := strings.Count(again, "running kiln-"); n != 2 || strings.Count(again, "running kiln-worker-ahead-4.21.0-") != 1 ||
		strings.Count(again, "running kiln-master-ahead-4.21.0-") != 1 {
		t.Fatalf("second run with no change: %d runs, want the 2 failed upgrade-ahead runs again:\n%s", n, again)
	}
	if d := cmp.Diff(ready, readinessRows(again)); d != "" {
		t.Errorf("second run's readiness differs (-first +second):\n%s", d)
	}
}

// TestUnreadablePayloadIsNotReadyWithNoRun: a release image the registry
// does not have gets no run and the line cluster mode writes for it;
// every pool offered it reads it once.
func TestUnreadablePayloadIsNotReadyWithNoRun(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	missing := payload.Target{Version: "4.21.0", Image: reg.Host + "/openshift/release@sha256:" + strings.Repeat("0", 64)}
	plans := []aheadPlan{{pool: "worker", target: missing}, {pool: "master", target: missing}, {pool: "infra", target: missing, done: true, line: "Ready: x"}}
	readTargets(context.Background(), plans, registry.Remote{Insecure: []string{reg.Host}})
	for _, a := range plans[:2] {
		if a.err == nil || a.line != trigger.UnreadableLine(a.err) || !strings.Contains(a.line, "reading release 4.21.0") {
			t.Errorf("pool %s: err %v, line %q", a.pool, a.err, a.line)
		}
	}
	if plans[2].err != nil || plans[2].line != "Ready: x" {
		t.Errorf("a done plan was read again: %+v", plans[2])
	}
	if pending(plans) {
		t.Error("pending with every target unreadable or done")
	}
}

// rowsByRun reads the summary table: run name → its columns.
func rowsByRun(s string) map[string][]string {
	rows := map[string][]string{}
	in := false
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "POOL" && len(f) > 2 && f[2] == "RUN":
			in = true
		case in && len(f) >= 8 && strings.HasPrefix(f[2], "kiln-"):
			rows[f[2]] = f
		}
	}
	return rows
}

// readinessRows reads the readiness table: pool/release → its line.
func readinessRows(s string) map[string]string {
	rows := map[string]string{}
	in := false
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 2 && f[0] == "POOL" && f[1] == "RELEASE":
			in = true
		case in && len(f) > 2:
			rows[f[0]+"/"+f[1]] = strings.Join(f[2:], " ")
		}
	}
	return rows
}

// TestFolderKilnConfigSelectsTargetsAsTheClusterDoes: the folder's
// kiln-config in the trigger's namespace picks the targets; another
// namespace's is not kiln's; a bad value is refused with ParseConfig's
// message.
func TestFolderKilnConfigSelectsTargetsAsTheClusterDoes(t *testing.T) {
	cm := func(ns, v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: trigger.ConfigName, Namespace: ns},
			Data: map[string]string{"repository": "r.example/os-{pool}", "upgradeAhead": v}}
	}
	for _, tc := range []struct {
		name    string
		cms     []*corev1.ConfigMap
		want    payload.Selection
		wantErr bool
	}{
		{name: "no kiln-config", want: payload.DefaultSelection},
		{name: "z-stream only", cms: []*corev1.ConfigMap{cm("kiln", "z-stream")}, want: payload.Selection{ZStream: true}},
		{name: "another namespace's", cms: []*corev1.ConfigMap{cm("other", "none")}, want: payload.DefaultSelection},
		{name: "bad selector", cms: []*corev1.ConfigMap{cm("kiln", "x-stream")}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := aheadSelection(&mcrender.Objects{ConfigMaps: tc.cms}, trigger.DefaultNamespace)
			if tc.wantErr {
				_, want := trigger.ParseConfig(tc.cms[0])
				if err == nil || want == nil || err.Error() != want.Error() {
					t.Fatalf("error %v, want ParseConfig's %v", err, want)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("selection %+v (%v), want %+v", got, err, tc.want)
			}
		})
	}
}
