package env_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/test/env"
)

// TestKubeObjects creates one object of every kind kiln uses in the real
// apiserver and reads it back, proving the CRDs are installed and the
// scheme's types round-trip through the server's schema.
func TestKubeObjects(t *testing.T) {
	k := env.StartKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := k.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kiln"}}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}

	cases := []struct {
		obj   client.Object
		empty client.Object
		check func(got client.Object) string // returns the field that round-tripped
		want  string
	}{
		{
			obj: &mcfgv1.MachineConfig{
				ObjectMeta: metav1.ObjectMeta{Name: "99-worker-ssh", Labels: map[string]string{"machineconfiguration.openshift.io/role": "worker"}},
				Spec: mcfgv1.MachineConfigSpec{
					Config:          runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)},
					KernelArguments: []string{"nosmt"},
				},
			},
			empty: &mcfgv1.MachineConfig{},
			check: func(o client.Object) string { return o.(*mcfgv1.MachineConfig).Spec.KernelArguments[0] },
			want:  "nosmt",
		},
		{
			obj: &mcfgv1.MachineConfigPool{
				ObjectMeta: metav1.ObjectMeta{Name: "worker"},
				Spec: mcfgv1.MachineConfigPoolSpec{
					MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"machineconfiguration.openshift.io/role": "worker"}},
					NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}},
				},
			},
			empty: &mcfgv1.MachineConfigPool{},
			check: func(o client.Object) string {
				return o.(*mcfgv1.MachineConfigPool).Spec.MachineConfigSelector.MatchLabels["machineconfiguration.openshift.io/role"]
			},
			want: "worker",
		},
		{
			obj: &mcfgv1.MachineConfigNode{
				ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
				Spec: mcfgv1.MachineConfigNodeSpec{
					Node:          mcfgv1.MCOObjectReference{Name: "node-a"},
					Pool:          mcfgv1.MCOObjectReference{Name: "worker"},
					ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: "rendered-worker-abc"},
				},
			},
			empty: &mcfgv1.MachineConfigNode{},
			check: func(o client.Object) string { return o.(*mcfgv1.MachineConfigNode).Spec.ConfigVersion.Desired },
			want:  "rendered-worker-abc",
		},
		{
			obj: &machinev1beta1.MachineSet{
				ObjectMeta: metav1.ObjectMeta{Name: "ci-worker-a", Namespace: "kiln"},
				Spec: machinev1beta1.MachineSetSpec{
					Selector: metav1.LabelSelector{MatchLabels: map[string]string{"machine.openshift.io/cluster-api-machineset": "ci-worker-a"}},
					Template: machinev1beta1.MachineTemplateSpec{
						ObjectMeta: machinev1beta1.ObjectMeta{Labels: map[string]string{"machine.openshift.io/cluster-api-machineset": "ci-worker-a"}},
						Spec: machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{
							Value: &runtime.RawExtension{Raw: []byte(`{"kind":"GCPMachineProviderSpec","disks":[{"image":"rhcos-417"}]}`)},
						}},
					},
				},
			},
			empty: &machinev1beta1.MachineSet{},
			check: func(o client.Object) string {
				return string(o.(*machinev1beta1.MachineSet).Spec.Template.Spec.ProviderSpec.Value.Raw)
			},
			want: `{"disks":[{"image":"rhcos-417"}],"kind":"GCPMachineProviderSpec"}`,
		},
		{
			obj: &operatorv1.MachineConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
				Spec: operatorv1.MachineConfigurationSpec{
					StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
					// The Go type always serialises nodeDisruptionPolicy.sshkey,
					// whose schema requires actions; MCO writes this one too.
					NodeDisruptionPolicy: operatorv1.NodeDisruptionPolicyConfig{SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{
						Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}},
					}},
					ManagedBootImages: operatorv1.ManagedBootImages{MachineManagers: []operatorv1.MachineManager{{
						Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI,
						Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.All},
					}}},
				},
			},
			empty: &operatorv1.MachineConfiguration{},
			check: func(o client.Object) string {
				return string(o.(*operatorv1.MachineConfiguration).Spec.ManagedBootImages.MachineManagers[0].Selection.Mode)
			},
			want: "All",
		},
		{
			obj: &configv1.ClusterVersion{
				ObjectMeta: metav1.ObjectMeta{Name: "version"},
				Spec:       configv1.ClusterVersionSpec{ClusterID: "0b7a8e4c-8e9a-4d8e-9c1e-2f3a4b5c6d7e", Channel: "stable-4.20"},
			},
			empty: &configv1.ClusterVersion{},
			check: func(o client.Object) string { return o.(*configv1.ClusterVersion).Spec.Channel },
			want:  "stable-4.20",
		},
		{
			obj: &configv1.Infrastructure{
				ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
				Spec:       configv1.InfrastructureSpec{PlatformSpec: configv1.PlatformSpec{Type: configv1.GCPPlatformType}},
			},
			empty: &configv1.Infrastructure{},
			check: func(o client.Object) string { return string(o.(*configv1.Infrastructure).Spec.PlatformSpec.Type) },
			want:  "GCP",
		},
		{
			obj: &tektonv1.Pipeline{
				ObjectMeta: metav1.ObjectMeta{Name: "node-image", Namespace: "kiln"},
				Spec: tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{
					Name: "render", TaskRef: &tektonv1.TaskRef{Name: "kiln-render"},
				}}},
			},
			empty: &tektonv1.Pipeline{},
			check: func(o client.Object) string { return o.(*tektonv1.Pipeline).Spec.Tasks[0].TaskRef.Name },
			want:  "kiln-render",
		},
		{
			obj: &tektonv1.PipelineRun{
				ObjectMeta: metav1.ObjectMeta{Name: "kiln-worker-0123456789", Namespace: "kiln", Labels: map[string]string{"kiln.dev/pool": "worker"}},
				Spec:       tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "node-image"}},
			},
			empty: &tektonv1.PipelineRun{},
			check: func(o client.Object) string { return o.(*tektonv1.PipelineRun).Spec.PipelineRef.Name },
			want:  "node-image",
		},
		{
			obj: &kmmv1beta1.ModuleDay0{
				ObjectMeta: metav1.ObjectMeta{Name: "worker-kmods", Namespace: "kiln"},
				Spec: kmmv1beta1.ModuleDay0Spec{
					OSMapping: kmmv1beta1.OSMapping{
						Literal:        "Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)",
						ContainerImage: "quay.io/example/rhcos:414.92.202312311229-0",
						Build:          &kmmv1beta1.Build{DockerfileConfigMap: corev1.LocalObjectReference{Name: "kmm-kmod-dockerfile"}},
					},
					MachineConfigPoolSelector: map[string]string{"node-role.kubernetes.io/worker": ""},
				},
			},
			empty: &kmmv1beta1.ModuleDay0{},
			check: func(o client.Object) string {
				return o.(*kmmv1beta1.ModuleDay0).Spec.OSMapping.Build.DockerfileConfigMap.Name
			},
			want: "kmm-kmod-dockerfile",
		},
	}
	for _, tc := range cases {
		name := tc.obj.GetName()
		t.Run(typeName(tc.obj), func(t *testing.T) {
			if err := k.Client.Create(ctx, tc.obj); err != nil {
				t.Fatalf("creating %s: %v", name, err)
			}
			got := tc.empty
			if err := k.Client.Get(ctx, client.ObjectKeyFromObject(tc.obj), got); err != nil {
				t.Fatalf("reading back %s: %v", name, err)
			}
			if got.GetUID() == "" || got.GetUID() != tc.obj.GetUID() {
				t.Errorf("uid: got %q, created %q", got.GetUID(), tc.obj.GetUID())
			}
			if v := tc.check(got); v != tc.want {
				t.Errorf("round-tripped field: got %q, want %q", v, tc.want)
			}
		})
	}
}

// typeName names a subtest after the object's Go type, e.g. "v1.MachineConfig".
func typeName(o client.Object) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", o), "*")
}
