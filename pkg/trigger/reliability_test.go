package trigger

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The reliability tests have no Tekton controller: runs are only created,
// and the tests play Tekton's part where a run must move.

// expected computes pool's fingerprint from the cluster as it is now,
// with a controller that shares nothing with the one under test.
func (h *harness) expected(pool string) string {
	h.t.Helper()
	c := &Controller{Client: h.c, APIReader: h.c, Namespace: ns,
		Resolve: func(_ context.Context, ref string) (string, error) { return ref, nil }}
	var p mcfgv1.MachineConfigPool
	if err := h.c.Get(context.Background(), client.ObjectKey{Name: pool}, &p); err != nil {
		h.t.Fatal(err)
	}
	var w world
	if err := c.loadConfig(context.Background(), &w); err != nil {
		h.t.Fatal(err)
	}
	if err := c.loadInputs(context.Background(), &p, &w); err != nil {
		h.t.Fatal(err)
	}
	return w.fp.Sum
}

// settled waits until every pool has its final run and checks the
// invariants: no fingerprint has two runs, no pool two live runs. A pool's
// final run is one live run made for the pool's final inputs, or, when
// Tekton (the test) already finished that run successfully and nothing
// changed after, none live and a succeeded run of the final inputs: the
// trigger rightly makes no second run of the same inputs.
func (h *harness) settled(pools []string) {
	h.t.Helper()
	want := map[string]string{}
	for _, p := range pools {
		want[p] = h.expected(p)
	}
	// On a timeout, say what each pool had: which runs, in which state.
	var last []string
	defer func() {
		if h.t.Failed() {
			h.t.Logf("when the wait ended: %v", last)
		}
	}()
	final := func(p string) bool {
		live := h.live(p)
		for _, r := range live {
			last = append(last, fmt.Sprintf("%s: live %s fp=%s status=%q state=%d", p, r.Name, r.Labels[LabelFingerprint], r.Spec.Status, stateOf(r)))
		}
		switch {
		case len(live) == 1:
			return live[0].Labels[LabelFingerprint] == want[p]
		case len(live) > 1:
			return false
		}
		for _, r := range h.runs(p) {
			if r.Labels[LabelFingerprint] == want[p] && succeeded(r) {
				last = append(last, fmt.Sprintf("%s: %s of the final inputs succeeded", p, r.Name))
				return true
			}
		}
		last = append(last, fmt.Sprintf("%s: no live run and no succeeded run with fp=%s", p, want[p]))
		return false
	}
	eventually(h.t, 90*time.Second, "each pool's final run (one live run, or a succeeded one, of its final inputs)", func() bool {
		last = last[:0]
		ok := true
		for _, p := range pools {
			ok = final(p) && ok
		}
		return ok
	})
	consistently(h.t, 2*time.Second, "runs changed after the pools settled", func() bool {
		last = last[:0]
		for _, p := range pools {
			if !final(p) {
				return true
			}
		}
		return false
	})
	seen := map[string]string{}
	for _, r := range h.runs("") {
		fp := r.Labels[LabelPool] + "/" + r.Labels[LabelFingerprint]
		if other, dup := seen[fp]; dup {
			h.t.Fatalf("runs %s and %s share fingerprint %s", other, r.Name, fp)
		}
		seen[fp] = r.Name
	}
}

// cluster makes n enabled pools, each selecting the shared 00-worker MC
// and its own 50-<pool> MC.
func (h *harness) cluster(n int) []string {
	h.create(machineConfig("00-worker", "worker", "shared=0"))
	var pools []string
	for i := range n {
		p := fmt.Sprintf("pool%d", i)
		pools = append(pools, p)
		h.create(pool(p, true), machineConfig("50-"+p, p, "own=0"))
	}
	return pools
}

// TestManyEdits: 200 MC edits across 10 pools, some to the MC every pool
// shares, leave exactly one live run per pool, for its final inputs.
func TestManyEdits(t *testing.T) {
	h := newHarness(t)
	pools := h.cluster(10)
	h.start(300 * time.Millisecond)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		if rng.IntN(10) == 0 {
			h.setKarg("00-worker", fmt.Sprintf("shared=%d", i))
		} else {
			h.setKarg("50-"+pools[rng.IntN(len(pools))], fmt.Sprintf("own=%d", i))
		}
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
	}
	h.settled(pools)
	t.Logf("%d runs made in all for 10 pools and 200 edits", len(h.runs("")))
}

// TestKillRestart stops the trigger at 20 random points while pools are
// edited and runs move (Tekton's part played by the test), restarting it
// each time; in the end every pool has its final run, and no fingerprint
// ran twice.
func TestKillRestart(t *testing.T) {
	h := newHarness(t)
	pools := h.cluster(3)
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 20 {
		stop := h.start(150 * time.Millisecond)
		for e := range 1 + rng.IntN(6) {
			h.setKarg("50-"+pools[rng.IntN(len(pools))], fmt.Sprintf("own=%d-%d", round, e))
			time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
		}
		// Tekton moves some run on: into rollout, or to its end.
		if live := h.live(pools[rng.IntN(len(pools))]); len(live) > 0 && live[0].Spec.Status == "" {
			switch rng.IntN(3) {
			case 0:
				h.progress(live[0].Name, []string{"render", "rollout"}, "")
			case 1:
				h.progress(live[0].Name, []string{"render", "rollout"}, corev1.ConditionTrue)
			}
		}
		time.Sleep(time.Duration(rng.IntN(800)) * time.Millisecond) // the kill point
		stop()
	}
	// Whatever was left in rollout finishes, as Tekton would.
	for _, p := range pools {
		for _, r := range h.live(p) {
			if stateOf(r) == runRollout {
				h.progress(r.Name, []string{"render", "rollout"}, corev1.ConditionTrue)
			}
		}
	}
	h.start(150 * time.Millisecond)
	h.settled(pools)
}

// TestAPIServerRestart: the trigger rides out an apiserver restart and
// reacts to the next edit.
func TestAPIServerRestart(t *testing.T) {
	h := newHarness(t)
	pools := h.cluster(2)
	h.start(200 * time.Millisecond)
	h.settled(pools)
	if err := h.kube.RestartAPIServer(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the apiserver to answer again", func() bool {
		return h.c.Get(context.Background(), client.ObjectKey{Name: pools[0]}, &mcfgv1.MachineConfigPool{}) == nil
	})
	h.setKarg("50-pool0", "own=after-restart")
	h.setKarg("00-worker", "shared=after-restart")
	h.settled(pools)
}
