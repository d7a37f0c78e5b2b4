package trigger

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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

// writeCounter counts the trigger's API writes (events included) and
// its reads (watches left out: one long request each).
type writeCounter struct {
	rt            http.RoundTripper
	writes, reads *atomic.Int64
}

func (w writeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	switch {
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		w.writes.Add(1)
	case r.URL.Query().Get("watch") != "true":
		w.reads.Add(1)
	}
	return w.rt.RoundTrip(r)
}

// BenchmarkTriggerLatency: 5000 MCs in 50 pools, and the ClusterVersion
// offering an update, so upgrade-ahead is on and every edit also makes
// the pool's upgrade-ahead run; one MC edit at a time, the time until its
// pool's PipelineRun exists (p50, p99) and the trigger's API writes and
// reads per edit, beside a CPU load of one busy process per
// core (the load average at the start and end of each timed loop is
// reported). The reference, measured in the same loop, is how long a
// plain watch takes to see the edit: the floor any controller sits on.
// ratio-p50 is the trigger's p50 over that floor's. settle=0 measures the
// trigger's own work; settle=production adds DefaultSettle on purpose.
func BenchmarkTriggerLatency(b *testing.B) {
	const pools, perPool = 50, 100
	h := newHarness(b)
	fast := rest.CopyConfig(h.kube.Config)
	fast.QPS, fast.Burst = 1000, 2000
	c, err := client.New(fast, client.Options{Scheme: h.kube.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	h.c = c
	h.offerUpdates(h.offered("4.18.3"))
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
	stopLoad := cpuLoad(b, runtime.NumCPU())
	defer stopLoad()
	bl := &benchLatency{h: h, fast: fast, pools: names, perPool: perPool}
	for _, s := range []struct {
		name        string
		settle, max time.Duration
	}{{"settle=0", 0, 0}, {"settle=production", DefaultSettle, DefaultMaxSettle}} {
		b.Run(s.name, func(b *testing.B) { bl.run(b, s.settle, s.max) })
	}
}

// benchLatency is the shared cluster of BenchmarkTriggerLatency's
// sub-benchmarks; each starts its own trigger on it.
type benchLatency struct {
	h       *harness
	fast    *rest.Config
	pools   []string
	perPool int
	edit    int // edits so far, so each sub-benchmark's edits are new
}

func (bl *benchLatency) run(b *testing.B, settle, maxSettle time.Duration) {
	const edits = 100
	h := bl.h
	var writes, reads atomic.Int64
	cfg := rest.CopyConfig(bl.fast)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return writeCounter{rt, &writes, &reads} }
	mgr, err := NewManager(cfg, Options{Namespace: ns, MetricsAddr: "0", ProbeAddr: "0", Settle: settle, MaxSettle: maxSettle})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()
	// Each pool's run and its upgrade-ahead run.
	eventually(b, 5*time.Minute, "two runs per pool", func() bool { return len(h.runs("")) >= 2*len(bl.pools) })

	wc, err := client.NewWithWatch(h.kube.Config, client.Options{Scheme: h.kube.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	runsW := watchFromNow(b, wc, &pipelinev1.PipelineRunList{}, client.InNamespace(ns))
	defer runsW.Stop()
	mcsW := watchFromNow(b, wc, &mcfgv1.MachineConfigList{})
	defer mcsW.Stop()
	// One untimed edit: its run comes after the new trigger's first pass
	// over every pool, which must not count against the timed edits.
	bl.editOnce(b, mcsW, runsW)
	var trigger, reference []time.Duration
	writes.Store(0)
	reads.Store(0)
	loadStart, cpuStart := loadAverage(b), cpuTime(b)
	b.ResetTimer()
	for range edits {
		ref, trig := bl.editOnce(b, mcsW, runsW)
		reference = append(reference, ref)
		trigger = append(trigger, trig)
	}
	b.StopTimer()
	loadEnd, cpu := loadAverage(b), cpuTime(b)-cpuStart
	p50, p99 := percentile(trigger, 50), percentile(trigger, 99)
	ref50, ref99 := percentile(reference, 50), percentile(reference, 99)
	perEdit := float64(writes.Load()) / edits
	readsPerEdit := float64(reads.Load()) / edits
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(ref50), "ref-watch-p50-ms")
	b.ReportMetric(ms(ref99), "ref-watch-p99-ms")
	b.ReportMetric(float64(p50)/float64(ref50), "ratio-p50")
	// The process's CPU: the trigger's, and the benchmark's own clients.
	b.ReportMetric(ms(cpu)/edits, "cpu-ms/edit")
	b.ReportMetric(perEdit, "writes/edit")
	b.ReportMetric(readsPerEdit, "reads/edit")
	b.ReportMetric(loadStart, "load-start")
	b.ReportMetric(loadEnd, "load-end")
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	fmt.Printf("trigger settle=%s: p50 %s p99 %s ref p50 %s p99 %s writes/edit %.1f reads/edit %.1f load %.1f->%.1f\n",
		settle, r(p50), r(p99), r(ref50), r(ref99), perEdit, readsPerEdit, loadStart, loadEnd)
}

// editOnce edits one MC and returns how long the plain watch took to see
// the edit (the reference) and how long until the pool's new run existed.
func (bl *benchLatency) editOnce(b *testing.B, mcsW, runsW watch.Interface) (ref, trig time.Duration) {
	h, i := bl.h, bl.edit
	bl.edit++
	p := bl.pools[i%len(bl.pools)]
	mc := fmt.Sprintf("50-%s-%03d", p, (i/len(bl.pools))%bl.perPool)
	karg := fmt.Sprintf("edit=%d", i)
	start := time.Now()
	h.setKarg(mc, karg)
	seen := waitFor(b, "the MC watch to see "+mc, mcsW.ResultChan(), func(e watch.Event) bool {
		m, ok := e.Object.(*mcfgv1.MachineConfig)
		return ok && m.Name == mc && slices.Contains(m.Spec.KernelArguments, karg)
	})
	// The pool's new run is the watch's next ADDED run of the pool that
	// is not an upgrade-ahead run: decided from the event alone, as the
	// reference is, with no API call between the event and the clock.
	at := waitFor(b, "a new run of "+p, runsW.ResultChan(), func(e watch.Event) bool {
		r, ok := e.Object.(*pipelinev1.PipelineRun)
		return ok && e.Type == watch.Added && r.Labels[LabelPool] == p && r.Labels[LabelPipeline] != pipelineAhead
	})
	return seen.Sub(start), at.Sub(start)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cpuLoad starts n processes that spin until stop is called: the trigger
// shares the machine with busy neighbours, as a control plane node does.
// Processes, not goroutines, so the load competes through the kernel's
// scheduler and not inside the trigger's own Go runtime.
func cpuLoad(b *testing.B, n int) (stop func()) {
	var cmds []*exec.Cmd
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			b.Fatalf("starting the CPU load: %v", err)
		}
		cmds = append(cmds, cmd)
	}
	return func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
}

// cpuTime is the CPU (user and system) this process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("reading the CPU time: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage reads the one-minute load average.
func loadAverage(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatalf("reading the load average: %v", err)
	}
	f, err := strconv.ParseFloat(strings.Fields(string(raw))[0], 64)
	if err != nil {
		b.Fatalf("parsing /proc/loadavg %q: %v", raw, err)
	}
	return f
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
func waitFor(b *testing.B, what string, ch <-chan watch.Event, ok func(watch.Event) bool) time.Time {
	timeout := time.After(time.Minute)
	for {
		select {
		case e, open := <-ch:
			at := time.Now()
			if !open {
				b.Fatalf("waiting for %s: the watch closed", what)
			}
			if e.Type == watch.Error {
				b.Fatalf("waiting for %s: %v", what, e.Object)
			}
			if ok(e) {
				return at
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
