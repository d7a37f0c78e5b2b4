package bootimage

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/test/env"
)

// writeCounter counts the API requests that change something, per resource.
type writeCounter struct {
	mu     sync.Mutex
	writes map[string]int // "PATCH machinesets" → n
	gets   map[string]int // "secrets" → n
	reads  int
}

func (c *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		c.mu.Lock()
		if req.Method == http.MethodGet {
			c.reads++
			c.gets[resourceOf(req.URL.Path)]++
		} else {
			c.writes[req.Method+" "+resourceOf(req.URL.Path)]++
		}
		c.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (c *writeCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes, c.gets, c.reads = map[string]int{}, map[string]int{}, 0
}

func (c *writeCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes[key]
}

func (c *writeCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.writes {
		n += v
	}
	return n
}

// snapshot returns a copy of the writes counted since the last reset.
func (c *writeCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.writes))
	for k, v := range c.writes {
		out[k] = v
	}
	return out
}

// resourceOf turns /apis/g/v/namespaces/ns/machinesets/x[/status] into
// "machinesets" (or "machineconfigurations/status"), for any resource, so
// that a write to a kind nobody listed here is still counted by its name.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return path
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return path
	case 1, 2:
		return parts[0]
	}
	return parts[0] + "/" + parts[2]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// testCluster is test/env's apiserver with the objects a boot image pass
// reads, and a client whose writes are counted.
type testCluster struct {
	kube    *env.Kube
	c       client.Client // counted
	counter *writeCounter
}

func startCluster(t testing.TB, platform configv1.PlatformType) *testCluster {
	t.Helper()
	k := env.StartKube(t)
	counter := &writeCounter{}
	counter.reset()
	cfg := rest.CopyConfig(k.Config)
	cfg.Wrap(counter.wrap)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: k.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	tc := &testCluster{kube: k, c: c, counter: counter}
	ctx := context.Background()
	for _, ns := range []string{MachineAPINamespace, MCONamespace} {
		tc.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	inf := infra(platform)
	st := inf.Status
	tc.create(t, inf)
	inf.Status = st
	if err := k.Client.Status().Update(ctx, inf); err != nil {
		t.Fatalf("writing Infrastructure status: %v", err)
	}
	tc.create(t, testStreamConfigMap(t))
	tc.setClusterVersion(t, "4.20.3", configv1.CompletedUpdate)
	tc.create(t, &operatorv1.MachineConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: MachineConfigurationName},
		Spec: operatorv1.MachineConfigurationSpec{
			StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
			// openshift/api always serialises sshkey, whose schema requires actions.
			NodeDisruptionPolicy: operatorv1.NodeDisruptionPolicyConfig{SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{
				Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}}},
		},
	})
	return tc
}

func (tc *testCluster) create(t testing.TB, o client.Object) {
	t.Helper()
	if err := tc.kube.Client.Create(context.Background(), o); err != nil {
		t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

// setClusterVersion creates or updates ClusterVersion "version" whose
// desired release is version and whose latest history entry is in state.
func (tc *testCluster) setClusterVersion(t testing.TB, version string, state configv1.UpdateState) {
	t.Helper()
	ctx := context.Background()
	cv := &configv1.ClusterVersion{}
	err := tc.kube.Client.Get(ctx, client.ObjectKey{Name: "version"}, cv)
	if apierrors.IsNotFound(err) {
		cv = &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"},
			Spec: configv1.ClusterVersionSpec{ClusterID: "0b7a8e4c-8e9a-4d8e-9c1e-2f3a4b5c6d7e"}}
		tc.create(t, cv)
	} else if err != nil {
		t.Fatal(err)
	}
	image := "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("ab", 32)
	cv.Status = configv1.ClusterVersionStatus{
		Desired:     configv1.Release{Version: version, Image: image},
		VersionHash: "hash", ObservedGeneration: cv.Generation,
		History: []configv1.UpdateHistory{{State: state, Version: version, Image: image, Verified: true,
			StartedTime: metav1.NewTime(time.Now().Add(-time.Hour))}},
	}
	if state == configv1.CompletedUpdate {
		cv.Status.History[0].CompletionTime = ptr(metav1.Now())
	}
	if err := tc.kube.Client.Status().Update(ctx, cv); err != nil {
		t.Fatalf("writing ClusterVersion status: %v", err)
	}
}

// setOptIn writes spec.managedBootImages.
func (tc *testCluster) setOptIn(t testing.TB, m ...operatorv1.MachineManager) {
	t.Helper()
	ctx := context.Background()
	mc := &operatorv1.MachineConfiguration{}
	if err := tc.kube.Client.Get(ctx, client.ObjectKey{Name: MachineConfigurationName}, mc); err != nil {
		t.Fatal(err)
	}
	mc.Spec.ManagedBootImages.MachineManagers = m
	if err := tc.kube.Client.Update(ctx, mc); err != nil {
		t.Fatalf("opting in: %v", err)
	}
}

func (tc *testCluster) reconciler(ns string) *Reconciler {
	return &Reconciler{Cluster: Kube{Client: tc.c}, Namespace: ns, DefaultArch: "x86_64",
		StableTimeout: 5 * time.Second, StablePoll: 100 * time.Millisecond}
}

func (tc *testCluster) machineConfiguration(t testing.TB) *operatorv1.MachineConfiguration {
	t.Helper()
	mc := &operatorv1.MachineConfiguration{}
	if err := tc.kube.Client.Get(context.Background(), client.ObjectKey{Name: MachineConfigurationName}, mc); err != nil {
		t.Fatal(err)
	}
	return mc
}

func condition(mc *operatorv1.MachineConfiguration, typ string) *metav1.Condition {
	for i := range mc.Status.Conditions {
		if mc.Status.Conditions[i].Type == typ {
			return &mc.Status.Conditions[i]
		}
	}
	return nil
}
