package trigger

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// writeCounter counts the trigger's API writes (events included).
type writeCounter struct {
	rt     http.RoundTripper
	writes *atomic.Int64
}

func (w writeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.writes.Add(1)
	}
	return w.rt.RoundTrip(r)
}

// BenchmarkTriggerLatency: 5000 MCs in 50 pools; one MC edit at a time,
// the time until its pool's PipelineRun exists (p50, p99) and the
// trigger's API writes per edit. The reference, measured in the same run,
// is how long a plain watch takes to see the edit: the floor any
// controller sits on. ratio-p50 is the trigger's p50 over that floor's.
// The settle window is zero here; in production it adds its 2s on purpose.
func BenchmarkTriggerLatency(b *testing.B) {
	const pools, perPool, edits = 50, 100, 100
	h := newHarness(b)
	fast := rest.CopyConfig(h.kube.Config)
	fast.QPS, fast.Burst = 1000, 2000
	c, err := client.New(fast, client.Options{Scheme: h.kube.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	h.c = c
	var names []string
	objs := []client.Object{}
	for i := range pools {
		p := fmt.Sprintf("pool%02d", i)
		names = append(names, p)
		objs = append(objs, pool(p, true))
		for j := range perPool {
			objs = append(objs, machineConfig(fmt.Sprintf("50-%s-%03d", p, j), p, fmt.Sprintf("k%d=0", j)))
		}
	}
	h.createParallel(objs, 4)
	var writes atomic.Int64
	cfg := rest.CopyConfig(fast)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return writeCounter{rt, &writes} }
	mgr, err := NewManager(cfg, Options{Namespace: ns, MetricsAddr: "0", ProbeAddr: "0"})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = mgr.Start(ctx) }()
	eventually(b, 5*time.Minute, "one run per pool", func() bool { return len(h.runs("")) == pools })

	wc, err := client.NewWithWatch(h.kube.Config, client.Options{Scheme: h.kube.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	runsW := watchFromNow(b, wc, &pipelinev1.PipelineRunList{}, client.InNamespace(ns))
	defer runsW.Stop()
	mcsW := watchFromNow(b, wc, &mcfgv1.MachineConfigList{})
	defer mcsW.Stop()
	var trigger, reference []time.Duration
	writes.Store(0)
	b.ResetTimer()
	for i := range edits {
		p := names[i%pools]
		mc := fmt.Sprintf("50-%s-%03d", p, i%perPool)
		before := len(h.runs(p))
		start := time.Now()
		h.setKarg(mc, fmt.Sprintf("edit=%d", i))
		seen := waitFor(b, "the MC watch to see "+mc, mcsW.ResultChan(), func(o any) bool {
			m, ok := o.(*mcfgv1.MachineConfig)
			return ok && m.Name == mc && slices.Contains(m.Spec.KernelArguments, fmt.Sprintf("edit=%d", i))
		})
		reference = append(reference, seen.Sub(start))
		at := waitFor(b, "a new run of "+p, runsW.ResultChan(), func(o any) bool {
			r, ok := o.(*pipelinev1.PipelineRun)
			return ok && r.Labels[LabelPool] == p && len(h.runs(p)) > before
		})
		trigger = append(trigger, at.Sub(start))
	}
	b.StopTimer()
	p50, p99 := percentile(trigger, 50), percentile(trigger, 99)
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(percentile(reference, 50).Microseconds())/1000, "ref-watch-p50-ms")
	b.ReportMetric(float64(p50)/float64(percentile(reference, 50)), "ratio-p50")
	b.ReportMetric(float64(writes.Load())/edits, "writes/edit")
}

// watchFromNow watches changes only, from the list's resourceVersion; a
// watch without one starts with every existing object.
func watchFromNow(b *testing.B, wc client.WithWatch, list client.ObjectList, opts ...client.ListOption) watch.Interface {
	if err := wc.List(context.Background(), list, append(opts, client.Limit(1))...); err != nil {
		b.Fatal(err)
	}
	raw := &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}
	w, err := wc.Watch(context.Background(), list, append(opts, &client.ListOptions{Raw: raw})...)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// waitFor reads events until ok accepts one, returning when.
func waitFor(b *testing.B, what string, ch <-chan watch.Event, ok func(any) bool) time.Time {
	timeout := time.After(time.Minute)
	for {
		select {
		case e, open := <-ch:
			if !open {
				b.Fatalf("waiting for %s: the watch closed", what)
			}
			if e.Type == watch.Error {
				b.Fatalf("waiting for %s: %v", what, e.Object)
			}
			if ok(e.Object) {
				return time.Now()
			}
		case <-timeout:
			b.Fatalf("timed out waiting for %s", what)
		}
	}
}

func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// createParallel creates objs with n workers: 5000 one-by-one creates
// would dominate the benchmark's setup.
func (h *harness) createParallel(objs []client.Object, n int) {
	ch := make(chan client.Object)
	var wg sync.WaitGroup
	var failed atomic.Value
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range ch {
				// etcd on a busy 2-core machine times out now and then.
				var err error
				for try := 0; try < 5; try++ {
					if err = h.c.Create(context.Background(), o); err == nil || apierrors.IsAlreadyExists(err) {
						err = nil
						break
					}
					time.Sleep(time.Second)
				}
				if err != nil {
					failed.Store(err)
				}
			}
		}()
	}
	for _, o := range objs {
		ch <- o
	}
	close(ch)
	wg.Wait()
	if err := failed.Load(); err != nil {
		h.t.Fatal(err)
	}
}
