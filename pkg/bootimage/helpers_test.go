package bootimage

import (
	"encoding/json"
	"fmt"
	operatorv1 "github.com/openshift/api/operator/v1"
	"os"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// testStream reads testdata/stream-4.20.json as the ConfigMap would hold it.
func testStreamConfigMap(t testing.TB) *corev1.ConfigMap {
	t.Helper()
	b, err := os.ReadFile("testdata/stream-4.20.json")
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: BootImagesConfigMap, Namespace: MCONamespace},
		Data:       map[string]string{StreamKey: string(b), ReleaseVersionKey: "4.20.3", MCOReleaseVersionKey: "4.20.3"},
	}
}

func testStream(t testing.TB) *Stream {
	t.Helper()
	s, err := ParseStream(testStreamConfigMap(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// machineSet wraps a provider spec value (a Go type of openshift/api) in a
// Machine API MachineSet as the installer writes it.
func machineSet(t testing.TB, name string, spec any) *machinev1beta1.MachineSet {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	sel := map[string]string{"machine.openshift.io/cluster-api-machineset": name}
	return &machinev1beta1.MachineSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: "MachineSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: MachineAPINamespace},
		Spec: machinev1beta1.MachineSetSpec{
			Selector: metav1.LabelSelector{MatchLabels: sel},
			Template: machinev1beta1.MachineTemplateSpec{
				ObjectMeta: machinev1beta1.ObjectMeta{Labels: sel},
				Spec:       machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: raw}}},
			},
		},
	}
}

// infra is an installer-made Infrastructure; on vSphere its platformSpec
// names the vCenter and failure domain vsphereSpec's workspace is in.
func infra(p configv1.PlatformType) *configv1.Infrastructure {
	inf := &configv1.Infrastructure{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec:       configv1.InfrastructureSpec{PlatformSpec: configv1.PlatformSpec{Type: p}},
		Status: configv1.InfrastructureStatus{InfrastructureName: "ci-7xk2p",
			ControlPlaneTopology: configv1.HighlyAvailableTopologyMode, InfrastructureTopology: configv1.HighlyAvailableTopologyMode,
			APIServerURL: "https://api.ci.example:6443", APIServerInternalURL: "https://api-int.ci.example:6443", EtcdDiscoveryDomain: "",
			PlatformStatus: &configv1.PlatformStatus{Type: p}},
	}
	if p == configv1.VSpherePlatformType {
		inf.Spec.PlatformSpec.VSphere = &configv1.VSpherePlatformSpec{
			VCenters: []configv1.VSpherePlatformVCenterSpec{{Server: "vcenter.ci.example", Port: 443, Datacenters: []string{"dc1"}}},
			FailureDomains: []configv1.VSpherePlatformFailureDomainSpec{{Name: "generated-failure-domain", Region: "generated-region", Zone: "generated-zone",
				Server: "vcenter.ci.example", Topology: configv1.VSpherePlatformTopology{Datacenter: "dc1", ComputeCluster: "/dc1/host/c1",
					Networks: []string{"ci-segment"}, Datastore: "/dc1/datastore/ds1", ResourcePool: "/dc1/host/c1/Resources", Folder: "/dc1/vm/ci-7xk2p"}}},
		}
	}
	return inf
}

// changedPaths lists the leaf paths whose values differ between two JSON
// documents, with the new values.
func changedPaths(a, b any) map[string]any {
	out := map[string]any{}
	var walk func(p string, x, y any)
	walk = func(p string, x, y any) {
		xm, xok := x.(map[string]any)
		ym, yok := y.(map[string]any)
		if xok && yok {
			keys := map[string]bool{}
			for k := range xm {
				keys[k] = true
			}
			for k := range ym {
				keys[k] = true
			}
			for k := range keys {
				walk(p+"."+k, xm[k], ym[k])
			}
			return
		}
		xa, xok := x.([]any)
		ya, yok := y.([]any)
		if xok && yok && len(xa) == len(ya) {
			for i := range xa {
				walk(fmt.Sprintf("%s[%d]", p, i), xa[i], ya[i])
			}
			return
		}
		if !cmp.Equal(x, y) {
			out[p] = y
		}
	}
	walk("", a, b)
	return out
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func ptr[T any](v T) *T { return &v }

// folderMachineConfiguration is the MachineConfiguration of a manifest
// folder, valid as the apiserver (and so the folder reader) requires:
// openshift/api always serialises sshkey, whose schema requires actions,
// and managementState must be set.
func folderMachineConfiguration() *operatorv1.MachineConfiguration {
	return &operatorv1.MachineConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "operator.openshift.io/v1", Kind: "MachineConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: MachineConfigurationName},
		Spec: operatorv1.MachineConfigurationSpec{
			StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
			NodeDisruptionPolicy: operatorv1.NodeDisruptionPolicyConfig{SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{
				Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}}},
		},
	}
}
