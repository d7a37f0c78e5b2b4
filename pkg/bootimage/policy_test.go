package bootimage

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

func loadYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestAdmissionPolicy installs config/bootimages' ValidatingAdmissionPolicy
// in test/env's apiserver: opting in is denied on baremetal and
// AzureStackCloud, allowed on GCP, and opting out is always allowed.
func TestAdmissionPolicy(t *testing.T) {
	tc := startCluster(t, configv1.BareMetalPlatformType)
	ctx := context.Background()
	pol := &admissionv1.ValidatingAdmissionPolicy{}
	bind := &admissionv1.ValidatingAdmissionPolicyBinding{}
	loadYAML(t, "../../config/bootimages/validatingadmissionpolicy.yaml", pol)
	loadYAML(t, "../../config/bootimages/validatingadmissionpolicybinding.yaml", bind)
	tc.create(t, pol)
	tc.create(t, bind)

	optIn := func(m operatorv1.MachineManager) error {
		mc := tc.machineConfiguration(t)
		mc.Spec.ManagedBootImages.MachineManagers = []operatorv1.MachineManager{m}
		return tc.kube.Client.Update(ctx, mc)
	}
	setPlatform := func(p configv1.PlatformType, cloud configv1.AzureCloudEnvironment) {
		inf := &configv1.Infrastructure{}
		if err := tc.kube.Client.Get(ctx, client.ObjectKey{Name: "cluster"}, inf); err != nil {
			t.Fatal(err)
		}
		inf.Status.PlatformStatus = &configv1.PlatformStatus{Type: p}
		if cloud != "" {
			inf.Status.PlatformStatus.Azure = &configv1.AzurePlatformStatus{CloudName: cloud}
		}
		if err := tc.kube.Client.Status().Update(ctx, inf); err != nil {
			t.Fatal(err)
		}
	}
	// The policy takes effect once the apiserver has compiled it.
	var denied error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		denied = optIn(mapi(operatorv1.All, nil))
		return denied != nil, nil
	})
	if err != nil {
		t.Fatalf("opt-in on baremetal was never denied")
	}
	if !strings.Contains(denied.Error(), "boot image updates are only supported on GCP, AWS, Azure (not AzureStackCloud) and VSphere; this cluster is BareMetal") {
		t.Fatalf("denial: %v", denied)
	}
	partial := mapi(operatorv1.Partial, &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}})
	if err := optIn(partial); err == nil || !strings.Contains(err.Error(), "this cluster is BareMetal") {
		t.Fatalf("Partial opt-in on baremetal: %v", err)
	}
	if err := optIn(mapi(operatorv1.None, nil)); err != nil {
		t.Fatalf("opting out on baremetal denied: %v", err)
	}
	setPlatform(configv1.AzurePlatformType, configv1.AzureStackCloud)
	if err := optIn(mapi(operatorv1.All, nil)); err == nil || !strings.Contains(err.Error(), "this cluster is AzureStackCloud") {
		t.Fatalf("AzureStackCloud opt-in: %v", err)
	}
	setPlatform(configv1.GCPPlatformType, "")
	if err := optIn(mapi(operatorv1.All, nil)); err != nil {
		t.Fatalf("opt-in on GCP denied: %v", err)
	}
}
