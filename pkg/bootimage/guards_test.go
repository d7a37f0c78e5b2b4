package bootimage

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestArchOf(t *testing.T) {
	single := &configv1.ClusterVersion{}
	multi := &configv1.ClusterVersion{Status: configv1.ClusterVersionStatus{Desired: configv1.Release{Architecture: configv1.ClusterVersionArchitectureMulti}}}
	cases := []struct {
		ann       *string
		cv        *configv1.ClusterVersion
		want      string
		skip, err bool
	}{
		{ann: nil, cv: single, want: "x86_64"},
		{ann: nil, cv: multi, skip: true},
		{ann: ptr("kubernetes.io/arch=arm64"), cv: multi, want: "aarch64"},
		{ann: ptr("topology.ebs.csi.aws.com/zone=eu-central-1a, kubernetes.io/arch=s390x"), cv: single, want: "s390x"},
		{ann: ptr("kubernetes.io/arch=ppc64le"), cv: single, want: "ppc64le"},
		{ann: ptr("kubernetes.io/arch=amd64"), cv: single, want: "x86_64"},
		{ann: ptr("kubernetes.io/arch=riscv64"), cv: single, err: true},
		{ann: ptr("topology.kubernetes.io/zone=a"), cv: single, err: true},
	}
	for _, c := range cases {
		ms := &machinev1beta1.MachineSet{}
		if c.ann != nil {
			ms.Annotations = map[string]string{ArchAnnotation: *c.ann}
		}
		got, skip, err := archOf(ms, c.cv, "x86_64")
		if (err != nil) != c.err || (skip != "") != c.skip || got != c.want {
			t.Errorf("%v: got %q skip %q err %v", c.ann, got, skip, err)
		}
	}
}

func TestHotLoopCheck(t *testing.T) {
	ms := &machinev1beta1.MachineSet{}
	spec := []byte(`{"ami":{"id":"ami-1"}}`)
	for i := 1; i <= HotLoopLimit; i++ {
		v, err := hotLoopCheck(ms, spec)
		if err != nil {
			t.Fatalf("patch %d refused: %v", i, err)
		}
		var h hotLoop
		_ = json.Unmarshal([]byte(v), &h)
		if h.Count != i {
			t.Fatalf("patch %d recorded count %d", i, h.Count)
		}
		ms.Annotations = map[string]string{HotLoopAnnotation: v}
	}
	if _, err := hotLoopCheck(ms, spec); err == nil || !strings.Contains(err.Error(), "hot loop") {
		t.Fatalf("patch %d: %v, want hot loop", HotLoopLimit+1, err)
	}
	// A different patch starts over.
	if v, err := hotLoopCheck(ms, []byte(`{"ami":{"id":"ami-2"}}`)); err != nil || !strings.Contains(v, `"count":1`) {
		t.Fatalf("new patch: %q %v", v, err)
	}
}

// TestGuardsOnAPIServer: waiting for a stable cluster, the hot-loop stop,
// platform defaults, unsupported platforms and conflict retries, on a real
// apiserver.
func TestGuardsOnAPIServer(t *testing.T) {
	tc := startCluster(t, configv1.AWSPlatformType)
	ctx := context.Background()
	newNS := func(t *testing.T, name string, sets ...*machinev1beta1.MachineSet) {
		tc.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		tc.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "worker-user-data", Namespace: name}, Data: map[string][]byte{UserDataKey: []byte(stubV35)}})
		for _, ms := range sets {
			ms.Namespace = name
			tc.create(t, ms)
		}
	}
	stale := func(name string) *machinev1beta1.MachineSet {
		return machineSet(t, name, awsSpec("ami-0123456789abcdef0", "us-east-1"))
	}

	t.Run("default-on platform opts in without admin opinion", func(t *testing.T) {
		newNS(t, "defaults", stale("a"))
		rep, err := tc.reconciler("defaults").Run(ctx)
		if err != nil || len(rep.Patched) != 1 {
			t.Fatalf("patched %v err %v", rep.Patched, err)
		}
		got := tc.machineConfiguration(t).Status.ManagedBootImagesStatus.MachineManagers
		if len(got) != 1 || got[0].Selection.Mode != operatorv1.All {
			t.Fatalf("status %+v", got)
		}
	})

	t.Run("release not default-on reflects None and patches nothing", func(t *testing.T) {
		newNS(t, "not-default", stale("a"))
		r := tc.reconciler("not-default")
		r.DefaultOptIn = ptr(false)
		rep, err := r.Run(ctx)
		if err != nil || rep.Enrolled != 0 || len(rep.Patched) != 0 {
			t.Fatalf("enrolled %d patched %v err %v", rep.Enrolled, rep.Patched, err)
		}
		got := tc.machineConfiguration(t).Status.ManagedBootImagesStatus.MachineManagers
		if len(got) != 1 || got[0].Selection.Mode != operatorv1.None {
			t.Fatalf("status %+v", got)
		}
	})

	t.Run("waits for a stable cluster", func(t *testing.T) {
		newNS(t, "upgrading", stale("a"))
		tc.setClusterVersion(t, "4.20.4", configv1.PartialUpdate) // stamp says 4.20.3
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(700 * time.Millisecond)
			tc.setClusterVersion(t, "4.20.4", configv1.CompletedUpdate)
		}()
		start := time.Now()
		rep, err := tc.reconciler("upgrading").Run(ctx)
		wg.Wait()
		if err != nil || len(rep.Patched) != 1 {
			t.Fatalf("patched %v err %v", rep.Patched, err)
		}
		if time.Since(start) < 500*time.Millisecond {
			t.Errorf("did not wait: %s", time.Since(start))
		}
	})

	t.Run("unstable cluster times out, nothing patched", func(t *testing.T) {
		newNS(t, "stuck", stale("a"))
		tc.setClusterVersion(t, "4.20.5", configv1.PartialUpdate)
		defer tc.setClusterVersion(t, "4.20.3", configv1.CompletedUpdate)
		tc.counter.reset()
		r := tc.reconciler("stuck")
		r.StableTimeout = 500 * time.Millisecond
		_, err := r.Run(ctx)
		if err == nil || !strings.Contains(err.Error(), "waiting 500ms for a stable cluster") || !strings.Contains(err.Error(), `desired "4.20.5"`) {
			t.Fatalf("error %v", err)
		}
		if n := tc.counter.get("PATCH machinesets"); n != 0 {
			t.Fatalf("%d patches", n)
		}
		if d := condition(tc.machineConfiguration(t), ConditionDegraded); d == nil || d.Status != metav1.ConditionTrue {
			t.Fatalf("degraded %+v", d)
		}
	})

	t.Run("Partial history defers whatever the stamp says", func(t *testing.T) {
		// MCO's isClusterStable: only a Completed history[0] is stable.
		newNS(t, "stamped", stale("a"))
		tc.setClusterVersion(t, "4.20.3", configv1.PartialUpdate) // stamp 4.20.3 == desired
		defer tc.setClusterVersion(t, "4.20.3", configv1.CompletedUpdate)
		tc.counter.reset()
		r := tc.reconciler("stamped")
		r.StableTimeout = 300 * time.Millisecond
		_, err := r.Run(ctx)
		if err == nil || !strings.Contains(err.Error(), "history[0] 4.20.3 is Partial") || !strings.Contains(err.Error(), `MCOReleaseImageVersion="4.20.3"`) {
			t.Fatalf("error %v", err)
		}
		if n := tc.counter.get("PATCH machinesets"); n != 0 {
			t.Fatalf("%d patches", n)
		}
	})

	t.Run("hot loop stops and degrades", func(t *testing.T) {
		newNS(t, "hotloop", stale("a"))
		key := client.ObjectKey{Namespace: "hotloop", Name: "a"}
		revert := func() {
			ms := &machinev1beta1.MachineSet{}
			if err := tc.kube.Client.Get(ctx, key, ms); err != nil {
				t.Fatal(err)
			}
			ms.Spec.Template.Spec.ProviderSpec.Value.Raw = stale("a").Spec.Template.Spec.ProviderSpec.Value.Raw
			if err := tc.kube.Client.Update(ctx, ms); err != nil {
				t.Fatal(err)
			}
		}
		for i := 1; i <= HotLoopLimit; i++ {
			if rep, err := tc.reconciler("hotloop").Run(ctx); err != nil || len(rep.Patched) != 1 {
				t.Fatalf("pass %d: patched %v err %v", i, rep.Patched, err)
			}
			revert() // something (Hive, ArgoCD) puts the old AMI back
		}
		tc.counter.reset()
		_, err := tc.reconciler("hotloop").Run(ctx)
		if err == nil || !strings.Contains(err.Error(), "hot loop") {
			t.Fatalf("pass %d: %v", HotLoopLimit+1, err)
		}
		if n := tc.counter.get("PATCH machinesets"); n != 0 {
			t.Fatalf("%d patches after the hot-loop stop", n)
		}
		d := condition(tc.machineConfiguration(t), ConditionDegraded)
		if d == nil || d.Status != metav1.ConditionTrue || !strings.HasPrefix(d.Message, "1 Degraded MAPI MachineSets | 0 Degraded CAPI MachineSets | Error(s): error syncing MAPI MachineSet a: ") {
			t.Fatalf("degraded %+v", d)
		}
	})

	t.Run("conflict is retried on the fresh object", func(t *testing.T) {
		newNS(t, "conflict", stale("a"))
		// Another writer changes the MachineSet between our read and our patch.
		var once sync.Once
		cfg := rest.CopyConfig(tc.kube.Config)
		patches := 0
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if req.Method == http.MethodPatch && strings.Contains(req.URL.Path, "/machinesets/") {
					patches++
					once.Do(func() {
						ms := &machinev1beta1.MachineSet{}
						if err := tc.kube.Client.Get(ctx, client.ObjectKey{Namespace: "conflict", Name: "a"}, ms); err == nil {
							ms.Labels = map[string]string{"touched": "by-someone-else"}
							_ = tc.kube.Client.Update(ctx, ms)
						}
					})
				}
				return rt.RoundTrip(req)
			})
		})
		c, err := client.New(cfg, client.Options{Scheme: tc.kube.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		r := tc.reconciler("conflict")
		r.Cluster = Kube{Client: c}
		rep, err := r.Run(ctx)
		if err != nil || len(rep.Patched) != 1 {
			t.Fatalf("patched %v err %v", rep.Patched, err)
		}
		if patches != 2 {
			t.Errorf("%d patch requests, want 2 (conflict, then retry)", patches)
		}
		ms := &machinev1beta1.MachineSet{}
		if err := tc.kube.Client.Get(ctx, client.ObjectKey{Namespace: "conflict", Name: "a"}, ms); err != nil {
			t.Fatal(err)
		}
		spec := &machinev1beta1.AWSMachineProviderConfig{}
		if _, err := DecodeProviderSpec(ms, spec); err != nil {
			t.Fatal(err)
		}
		if ms.Labels["touched"] != "by-someone-else" || *spec.AMI.ID != "ami-0a1b2c3d4e5f60718" {
			t.Errorf("labels %v ami %s: both writes must survive", ms.Labels, *spec.AMI.ID)
		}
	})

	t.Run("unsupported platform skips with reason", func(t *testing.T) {
		newNS(t, "baremetal", stale("a"))
		inf := &configv1.Infrastructure{}
		if err := tc.kube.Client.Get(ctx, client.ObjectKey{Name: "cluster"}, inf); err != nil {
			t.Fatal(err)
		}
		inf.Status.PlatformStatus.Type = configv1.BareMetalPlatformType
		if err := tc.kube.Client.Status().Update(ctx, inf); err != nil {
			t.Fatal(err)
		}
		tc.setOptIn(t, mapi(operatorv1.All, nil)) // the admin opts in regardless
		rep, err := tc.reconciler("baremetal").Run(ctx)
		if err != nil || len(rep.Skipped) != 1 || rep.Skipped[0].Reason != ReasonPlatformNotSupported || len(rep.Patched) != 0 {
			t.Fatalf("report %+v err %v", rep, err)
		}
	})
}
