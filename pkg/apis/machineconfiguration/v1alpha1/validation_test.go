package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/apis/machineconfiguration/v1alpha1"
	"github.com/kiln-dev/kiln/test/env"
)

// TestBootImageHistoryCRD: the generated CRD round-trips a history through
// the real apiserver, keeps machineResourceReference immutable and refuses
// unknown API groups.
func TestBootImageHistoryCRD(t *testing.T) {
	k := env.StartKube(t)
	ctx := context.Background()
	if err := k.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-machine-api"}}); err != nil {
		t.Fatal(err)
	}
	h := &v1alpha1.BootImageHistory{
		ObjectMeta: metav1.ObjectMeta{Name: "ci-worker-a-mapi-machineset", Namespace: "openshift-machine-api"},
		Spec: v1alpha1.BootImageHistorySpec{MachineResourceReference: v1alpha1.MachineResourceReference{
			Name: "ci-worker-a", Resource: "MachineSet", APIGroup: "machine.openshift.io"}},
		Status: v1alpha1.BootImageHistoryStatus{Details: []v1alpha1.BootImageHistoryDetail{{
			UpdateTime: metav1.NewTime(time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)), BootImageVersion: "9.6.20261001-0",
			BootImage: "ami-0a1b2c3d4e5f60718", ConfigMapGeneration: 3}}},
	}
	if err := k.Client.Create(ctx, h); err != nil {
		t.Fatalf("creating: %v", err)
	}
	got := &v1alpha1.BootImageHistory{}
	if err := k.Client.Get(ctx, client.ObjectKeyFromObject(h), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Details) != 1 || got.Status.Details[0].ConfigMapGeneration != 3 || got.Status.Details[0].BootImageVersion != "9.6.20261001-0" {
		t.Fatalf("round trip: %+v", got.Status)
	}
	got.Spec.MachineResourceReference.Name = "other"
	if err := k.Client.Update(ctx, got); err == nil || !strings.Contains(err.Error(), "machineResourceReference is immutable") {
		t.Fatalf("changing the reference: %v", err)
	}
	bad := h.DeepCopy()
	bad.Name, bad.ResourceVersion = "bad", ""
	bad.Spec.MachineResourceReference.APIGroup = "example.com"
	if err := k.Client.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "apiGroup") {
		t.Fatalf("unknown apiGroup: %v", err)
	}
}
