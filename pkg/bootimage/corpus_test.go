package bootimage

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestBadInputCorpus: every bad input is a clear error naming the object and
// field, nothing is patched, and BootImageUpdateDegraded says so.
func TestBadInputCorpus(t *testing.T) {
	tc := startCluster(t, configv1.AWSPlatformType)
	ctx := context.Background()
	tc.setOptIn(t, mapi(operatorv1.All, nil))
	cmKey := client.ObjectKey{Namespace: MCONamespace, Name: BootImagesConfigMap}
	setStream := func(t *testing.T, s string) func() {
		cm := &corev1.ConfigMap{}
		if err := tc.kube.Client.Get(ctx, cmKey, cm); err != nil {
			t.Fatal(err)
		}
		old := cm.Data[StreamKey]
		cm.Data[StreamKey] = s
		if err := tc.kube.Client.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := tc.kube.Client.Get(ctx, cmKey, cm); err != nil {
				t.Fatal(err)
			}
			cm.Data[StreamKey] = old
			if err := tc.kube.Client.Update(ctx, cm); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name    string
		ms      func(t *testing.T) *machinev1beta1.MachineSet
		setup   func(t *testing.T) (restore func())
		wantErr []string
	}{
		{name: "malformed stream JSON",
			setup:   func(t *testing.T) func() { return setStream(t, `{"stream": "rhcos-4.20", "architectures": {`) },
			wantErr: []string{`ConfigMap openshift-machine-config-operator/coreos-bootimages key "stream"`, "CoreOS stream metadata"}},
		{name: "stream without architectures",
			setup:   func(t *testing.T) func() { return setStream(t, `{"stream": "rhcos-4.20"}`) },
			wantErr: []string{`key "stream"`, "no architectures"}},
		{name: "missing region",
			ms: func(t *testing.T) *machinev1beta1.MachineSet {
				return machineSet(t, "no-region", awsSpec("ami-0123456789abcdef0", ""))
			},
			wantErr: []string{"MachineSet corpus-2/no-region", "placement.region: empty"}},
		{name: "malformed providerSpec",
			ms: func(t *testing.T) *machinev1beta1.MachineSet {
				ms := machineSet(t, "bad-spec", awsSpec("ami-0123456789abcdef0", "us-east-1"))
				ms.Spec.Template.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(`{"ami": "ami-0123456789abcdef0", "placement": {"region": 7}}`)}
				return ms
			},
			wantErr: []string{"MachineSet corpus-3/bad-spec spec.template.spec.providerSpec.value", "decoding as *v1beta1.AWSMachineProviderConfig"}},
		{name: "unknown arch",
			ms: func(t *testing.T) *machinev1beta1.MachineSet {
				ms := machineSet(t, "riscv", awsSpec("ami-0123456789abcdef0", "us-east-1"))
				ms.Annotations = map[string]string{ArchAnnotation: "kubernetes.io/arch=riscv64"}
				return ms
			},
			wantErr: []string{"MachineSet corpus-4/riscv annotation " + ArchAnnotation, `unknown architecture "riscv64"`}},
		{name: "ConfigMap missing",
			setup: func(t *testing.T) func() {
				cm := &corev1.ConfigMap{}
				if err := tc.kube.Client.Get(ctx, cmKey, cm); err != nil {
					t.Fatal(err)
				}
				if err := tc.kube.Client.Delete(ctx, cm); err != nil {
					t.Fatal(err)
				}
				return func() {
					cm.ResourceVersion = ""
					tc.create(t, cm)
				}
			},
			wantErr: []string{"reading boot images", "ConfigMap openshift-machine-config-operator/coreos-bootimages: not found"}},
		{name: "stub that cannot convert",
			ms: func(t *testing.T) *machinev1beta1.MachineSet {
				spec := awsSpec("ami-0123456789abcdef0", "us-east-1")
				spec.UserDataSecret.Name = "broken-user-data"
				return machineSet(t, "broken-stub", spec)
			},
			setup: func(t *testing.T) func() {
				tc.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "broken-user-data", Namespace: "corpus-6"},
					Data: map[string][]byte{UserDataKey: []byte(`{"ignition":{"version":"2.2.0"},"storage":{"files":[{"path":"relative/path","filesystem":"root","contents":{"source":"data:,x"}}]}}`)}})
				return func() {}
			},
			wantErr: []string{"MachineSet corpus-6/broken-stub: upgrading stub Ignition in Secret corpus-6/broken-user-data"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := fmt.Sprintf("corpus-%d", i)
			tc.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			tc.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "worker-user-data", Namespace: ns}, Data: map[string][]byte{UserDataKey: []byte(stubV35)}})
			ms := machineSet(t, "stale", awsSpec("ami-0123456789abcdef0", "us-east-1"))
			if c.ms != nil {
				ms = c.ms(t)
			}
			ms.Namespace = ns
			tc.create(t, ms)
			if c.setup != nil {
				defer c.setup(t)()
			}
			tc.counter.reset()
			r := tc.reconciler(ns)
			r.StableTimeout = 2 * time.Second
			_, err := r.Run(ctx)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if n := tc.counter.get("PATCH machinesets") + tc.counter.get("PUT secrets"); n != 0 {
				t.Errorf("%d writes to MachineSets/Secrets after a failed check", n)
			}
			got := &machinev1beta1.MachineSet{}
			if err := tc.kube.Client.Get(ctx, client.ObjectKeyFromObject(ms), got); err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != ms.ResourceVersion {
				t.Error("MachineSet changed")
			}
			deg := condition(tc.machineConfiguration(t), ConditionDegraded)
			if deg == nil || deg.Status != metav1.ConditionTrue || !strings.Contains(deg.Message, c.wantErr[len(c.wantErr)-1]) {
				t.Errorf("degraded condition %+v", deg)
			}
		})
	}
}
