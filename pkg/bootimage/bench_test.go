package bootimage

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BenchmarkFleet2000 runs a pass over 2000 GCP MachineSets of which 10% are
// stale, on test/env's apiserver. The reference, measured in the same run on
// the same objects, is the cheapest possible look at them: one list plus
// one get per MachineSet. Metrics: patches/op (must be 200), ns/op of the
// reference, and ours/reference.
func BenchmarkFleet2000(b *testing.B) {
	const total, stale = 2000, 200
	tc := startCluster(b, configv1.GCPPlatformType)
	ctx := context.Background()
	ns := MachineAPINamespace
	tc.create(b, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "worker-user-data", Namespace: ns}, Data: map[string][]byte{UserDataKey: []byte(stubV35)}})
	staleRaw := machineSet(b, "x", gcpSpec(oldGCP)).Spec.Template.Spec.ProviderSpec.Value.Raw
	var wg sync.WaitGroup
	errs := make(chan error, total)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < total; i += 8 {
				img := newGCP
				if i%10 == 0 {
					img = oldGCP
				}
				ms := machineSet(b, fmt.Sprintf("worker-%04d", i), gcpSpec(img))
				ms.Namespace = ns
				if err := tc.c.Create(ctx, ms); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	tc.setOptIn(b, mapi(operatorv1.All, nil))
	r := tc.reconciler(ns)

	makeStale := func() {
		for i := 0; i < total; i += 10 {
			ms := &machinev1beta1.MachineSet{}
			key := client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("worker-%04d", i)}
			if err := tc.kube.Client.Get(ctx, key, ms); err != nil {
				b.Fatal(err)
			}
			ms.Spec.Template.Spec.ProviderSpec.Value.Raw = staleRaw
			delete(ms.Annotations, HotLoopAnnotation) // a benchmark revert is not a hot loop
			if err := tc.kube.Client.Update(ctx, ms); err != nil {
				b.Fatal(err)
			}
		}
	}
	var patches int
	var ours, ref time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if i > 0 {
			makeStale()
		}
		tc.counter.reset()
		b.StartTimer()
		start := time.Now()
		rep, err := r.Run(ctx)
		ours += time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.Patched) != stale {
			b.Fatalf("patched %d, want %d", len(rep.Patched), stale)
		}
		patches += tc.counter.get("PATCH machinesets")

		start = time.Now()
		list := &machinev1beta1.MachineSetList{}
		if err := tc.c.List(ctx, list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		for j := range list.Items {
			if err := tc.c.Get(ctx, client.ObjectKeyFromObject(&list.Items[j]), &machinev1beta1.MachineSet{}); err != nil {
				b.Fatal(err)
			}
		}
		ref += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(patches)/float64(b.N), "patches/op")
	b.ReportMetric(float64(ref.Nanoseconds())/float64(b.N), "ref-ns/op")
	b.ReportMetric(float64(ours)/float64(ref), "ours/ref")
	b.Logf("ours %s/op, reference (list + %d gets) %s/op, ratio %.2f, %d patches/op",
		ours/time.Duration(b.N), total, ref/time.Duration(b.N), float64(ours)/float64(ref), patches/b.N)
}
