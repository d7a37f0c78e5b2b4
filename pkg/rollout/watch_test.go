package rollout_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/rollout"
)

// TestRolloutWatch runs rollouts against the real apiserver while the
// MachineConfigNode watch misbehaves the ways a cluster's does.
func TestRolloutWatch(t *testing.T) {
	h := newHarness(t, 25*time.Millisecond)
	ctx := context.Background()

	t.Run("a node deleted mid-rollout is no longer waited on", func(t *testing.T) {
		h.t = t
		h.pool("shrink", 3)
		cfg := h.config("shrink", image(21))
		cfg.Timeout = 20 * time.Second
		type outcome struct {
			res rollout.Result
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := rollout.Run(ctx, cfg)
			done <- outcome{res, err}
		}()
		// Once kiln's MachineConfig is in, the rollout is watching; the
		// last node (updated last) goes away, as a scale-down does it.
		deadline := time.Now().Add(15 * time.Second)
		for h.kilnMC("shrink") == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		// The Node first, and the MachineConfigNode once the pool no
		// longer counts it, so the MCO stand-in does not bring it back.
		if err := h.admin.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "shrink-2"}}); err != nil {
			t.Fatal(err)
		}
		h.waitPool("shrink", func(p *mcfgv1.MachineConfigPool) bool { return p.Status.MachineCount == 2 })
		if err := h.admin.Delete(ctx, &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: "shrink-2"}}); err != nil {
			t.Fatal(err)
		}
		got := <-done
		if got.err != nil || got.res.State != rollout.StateSucceeded || got.res.UpdatedNodes != 2 {
			t.Fatalf("Run = %s/%d, %v; want Succeeded/2", got.res.State, got.res.UpdatedNodes, got.err)
		}
	})

	t.Run("an expired watch is relisted and the rollout goes on", func(t *testing.T) {
		h.t = t
		h.pool("expire", 3)
		cfg := h.config("expire", image(22))
		cfg.Timeout = 20 * time.Second
		ew := &expiringWatches{WithWatch: h.kiln}
		cfg.Client = ew
		res, err := rollout.Run(ctx, cfg)
		if err != nil || res.State != rollout.StateSucceeded || res.UpdatedNodes != 3 {
			t.Fatalf("Run = %s/%d, %v; want Succeeded/3", res.State, res.UpdatedNodes, err)
		}
		if n := ew.expired.Load(); n == 0 {
			t.Fatal("no watch expired: the test proved nothing")
		}
	})
}

// expiringWatches hands out MachineConfigNode watches that pass one event
// and then report 410 Gone (the resourceVersion was compacted) without
// closing, which the watch.Interface contract allows: only a relist
// brings the rollout further.
type expiringWatches struct {
	client.WithWatch
	expired atomic.Int64
}

func (e *expiringWatches) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	w, err := e.WithWatch.Watch(ctx, list, opts...)
	if _, isMCN := list.(*mcfgv1.MachineConfigNodeList); !isMCN || err != nil {
		return w, err
	}
	return newExpiring(w, &e.expired), nil
}

type expiringWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func newExpiring(inner watch.Interface, expired *atomic.Int64) *expiringWatch {
	x := &expiringWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(x.out)
		gone := apierrors.NewResourceExpired("too old resource version: 1 (2)").ErrStatus
		for _, next := range []func() (watch.Event, bool){
			func() (watch.Event, bool) { ev, ok := <-inner.ResultChan(); return ev, ok },
			func() (watch.Event, bool) { expired.Add(1); return watch.Event{Type: watch.Error, Object: &gone}, true },
		} {
			ev, ok := next()
			if !ok {
				return
			}
			select {
			case x.out <- ev:
			case <-x.stop:
				return
			}
		}
		<-x.stop // silent but open, until the caller stops it
	}()
	return x
}

func (x *expiringWatch) ResultChan() <-chan watch.Event { return x.out }

func (x *expiringWatch) Stop() {
	x.once.Do(func() {
		close(x.stop)
		x.inner.Stop()
	})
}
