package trigger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func writtenRun(name, pipeline string, uid types.UID, rv string) *pipelinev1.PipelineRun {
	return &pipelinev1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid, ResourceVersion: rv,
		Labels: map[string]string{LabelRunsManagedBy: ManagedBy, LabelPool: "worker", LabelPipeline: pipeline}}}
}

// TestOwnWritesSeen: the cache counts as current for a pool's runs only
// when it shows each of the trigger's writes as the apiserver answered
// it: a created or patched run at the written resourceVersion, a deleted
// run gone (or its name reused by another UID); a run at another
// resourceVersion, a write that failed, and a write to the same pool's
// other runs are told apart; a live list forgets them all.
func TestOwnWritesSeen(t *testing.T) {
	node := runsKey{pool: "worker", pipeline: pipelineNodeImage}
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "pipelineruns"}, "a", errors.New("changed"))
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pipelineruns"}, "a")
	type write struct {
		run     *pipelinev1.PipelineRun
		deleted bool
		err     error
	}
	for _, tc := range []struct {
		name   string
		writes []write
		cached []*pipelinev1.PipelineRun
		listed bool // a live list after the writes
		want   []bool
	}{
		{name: "no writes", want: []bool{true}},
		{name: "created, not in the cache yet",
			writes: []write{{run: writtenRun("a", pipelineNodeImage, "u1", "5")}}, want: []bool{false}},
		{name: "created, in the cache",
			writes: []write{{run: writtenRun("a", pipelineNodeImage, "u1", "5")}},
			cached: []*pipelinev1.PipelineRun{writtenRun("a", pipelineNodeImage, "u1", "5")}, want: []bool{true, true}},
		{name: "patched, the cache at another resourceVersion",
			writes: []write{{run: writtenRun("a", pipelineNodeImage, "u1", "7")}},
			cached: []*pipelinev1.PipelineRun{writtenRun("a", pipelineNodeImage, "u1", "5")}, want: []bool{false, false}},
		{name: "deleted, still in the cache",
			writes: []write{{run: writtenRun("a", pipelineNodeImage, "u1", "5"), deleted: true}},
			cached: []*pipelinev1.PipelineRun{writtenRun("a", pipelineNodeImage, "u1", "5")}, want: []bool{false}},
		{name: "deleted, the name made again",
			writes: []write{{run: writtenRun("a", pipelineNodeImage, "u1", "5"), deleted: true}},
			cached: []*pipelinev1.PipelineRun{writtenRun("a", pipelineNodeImage, "u2", "9")}, want: []bool{true}},
		{name: "a patch found the run gone: as deleted",
			writes: []write{{run: writtenRun("a", pipelineNodeImage, "u1", "5"), err: notFound}}, want: []bool{true}},
		{name: "a failed write: live until listed",
			writes: []write{{run: writtenRun("a", pipelineNodeImage, "u1", "5"), err: conflict}},
			cached: []*pipelinev1.PipelineRun{writtenRun("a", pipelineNodeImage, "u1", "5")}, want: []bool{false, false}},
		{name: "a failed write, then a live list",
			writes: []write{{run: writtenRun("a", pipelineNodeImage, "u1", "5"), err: conflict}}, listed: true, want: []bool{true}},
		{name: "a created run not in the cache, then a live list",
			writes: []write{{run: writtenRun("a", pipelineNodeImage, "u1", "5")}}, listed: true, want: []bool{true}},
		{name: "a write to the pool's upgrade-ahead runs",
			writes: []write{{run: writtenRun("b", pipelineAhead, "u3", "5")}}, want: []bool{true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o ownWrites
			for _, w := range tc.writes {
				o.note(w.run, w.deleted, w.err)
			}
			if tc.listed {
				o.listed(node)
			}
			var got []bool
			for range tc.want {
				got = append(got, o.seen(node, tc.cached))
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("seen, asked %d times (-want +got):\n%s", len(tc.want), d)
			}
		})
	}
}

// fixedRuns is a reader whose List returns runs and counts the calls.
type fixedRuns struct {
	client.Reader
	runs  []pipelinev1.PipelineRun
	lists int
}

func (f *fixedRuns) List(_ context.Context, l client.ObjectList, _ ...client.ListOption) error {
	f.lists++
	l.(*pipelinev1.PipelineRunList).Items = append([]pipelinev1.PipelineRun(nil), f.runs...)
	return nil
}

// TestListRunsFromTheCacheOnceItShowsTheTriggersWrites: a pool's runs
// come from the cache with no apiserver list while the trigger wrote
// nothing it lacks; after a create the cache has not seen, from the
// apiserver (which has the run); once the cache shows it, from the cache
// again.
func TestListRunsFromTheCacheOnceItShowsTheTriggersWrites(t *testing.T) {
	old := *writtenRun("old", pipelineNodeImage, "u1", "3")
	created := *writtenRun("new", pipelineNodeImage, "u2", "8")
	created.CreationTimestamp = metav1.NewTime(old.CreationTimestamp.Add(time.Second))
	cache := &fixedRuns{runs: []pipelinev1.PipelineRun{old}}
	live := &fixedRuns{runs: []pipelinev1.PipelineRun{old, created}}
	c := &Controller{APIReader: live, Namespace: ns}
	names := func() []string {
		t.Helper()
		runs, err := c.listRunsFrom(context.Background(), cache, "worker", pipelineNodeImage)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range runs {
			out = append(out, r.Name)
		}
		return out
	}
	steps := []struct {
		what      string
		do        func()
		want      []string
		wantLists int
	}{
		{"nothing written", func() {}, []string{"old"}, 0},
		{"a create the cache lacks", func() { c.writes.note(created.DeepCopy(), false, nil) }, []string{"new", "old"}, 1},
		{"another write the cache shows", func() {
			c.writes.note(created.DeepCopy(), false, nil)
			cache.runs = append(cache.runs, created)
		}, []string{"new", "old"}, 1},
	}
	for _, s := range steps {
		s.do()
		got := names()
		if d := cmp.Diff(s.want, got); d != "" {
			t.Errorf("%s: runs (-want +got):\n%s", s.what, d)
		}
		if live.lists != s.wantLists {
			t.Errorf("%s: %d apiserver lists in all, want %d", s.what, live.lists, s.wantLists)
		}
	}
}
