package kmod_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

// TestKmodSignFromCluster: in cluster mode kmod-sign records in the live
// ModuleDay0's status what it signed (the Built condition with reason
// Signed, the module count and image, and status.imageDigest), and a
// ModuleDay0 that is not in the cluster is reported, not an error.
func TestKmodSignFromCluster(t *testing.T) {
	e := env.Start(t, env.Options{Kube: true, Registry: true})
	unsigned := e.Registry.Ref("kmods/given:unsigned")
	srcRef, err := name.ParseReference(unsigned, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(srcRef, kmodtest.UnsignedImage(t, true)); err != nil {
		t.Fatal(err)
	}
	if err := e.Kube.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-kmm"}}); err != nil {
		t.Fatal(err)
	}
	newSignFixture := func(tag string) *fixture {
		f := newFixture(t, e, "", "", "")
		f.md.Spec.OSMapping.Build = nil
		f.md.Spec.OSMapping.Sign.UnsignedImage = unsigned
		f.md.Spec.OSMapping.ContainerImage = e.Registry.Ref("kmods/rhcos:" + tag)
		f.kubeconfig = e.Kube.Kubeconfig(t)
		return f
	}

	// Not in the cluster: signed and pushed, status skipped with a note.
	f := newSignFixture("absent")
	var log bytes.Buffer
	if err := f.sign(t, &log); err != nil {
		t.Fatalf("kmod-sign of a ModuleDay0 not in the cluster: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "ModuleDay0 openshift-kmm/kiln-hello is not in the cluster; its status is not updated") {
		t.Errorf("log lacks the note:\n%s", log.String())
	}

	f = newSignFixture("414")
	live := f.md.DeepCopy()
	live.ResourceVersion = ""
	if err := e.Kube.Client.Create(t.Context(), live); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := f.sign(t, &log); err != nil {
		t.Fatalf("kmod-sign: %v\n%s", err, log.String())
	}
	ref, digest := f.image(t), f.result(t, "KMOD_IMAGE_DIGEST")
	if f.result(t, "KMOD_IMAGE_URL") != e.Registry.Ref("kmods/rhcos") || !strings.HasSuffix(ref, "@"+digest) {
		t.Fatalf("KMOD_IMAGE_URL %s, KMOD_IMAGE_DIGEST %s", ref, digest)
	}
	if err := e.Kube.Client.Get(t.Context(), client.ObjectKeyFromObject(live), live); err != nil {
		t.Fatal(err)
	}
	built := meta.FindStatusCondition(live.Status.Conditions, kmmv1beta1.ConditionBuilt)
	want := fmt.Sprintf("signed 2 modules into %s", ref)
	switch {
	case built == nil:
		t.Fatalf("no %s condition; status %+v", kmmv1beta1.ConditionBuilt, live.Status)
	case built.Status != metav1.ConditionTrue || built.Reason != kmod.ReasonSigned || built.Message != want:
		t.Errorf("condition %+v, want True/%s/%q", built, kmod.ReasonSigned, want)
	case built.ObservedGeneration != live.Generation:
		t.Errorf("observedGeneration %d, want %d", built.ObservedGeneration, live.Generation)
	}
	if live.Status.ImageDigest != digest {
		t.Errorf("status.imageDigest %q, want the signed image's %s", live.Status.ImageDigest, digest)
	}
}
