package kmod_test

import (
	"bytes"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

// TestKmodBuildFromCluster reads the Dockerfile ConfigMap, the payload
// ConfigMap and the ClusterVersion from a real apiserver, and builds a
// two-stage Dockerfile (no sign section, so the target is containerImage
// itself). DTK_AUTO is the driver-toolkit tag of the release image the
// ClusterVersion desires; a second build shows --dtk-image overrides it.
func TestKmodBuildFromCluster(t *testing.T) {
	e := env.Start(t, env.Options{Kube: true, Registry: true, Buildah: true})
	_, kver, err := env.KernelHeaders()
	if err != nil {
		t.Fatal(err)
	}
	osImage := env.PushOSImage(t, e.Registry.Ref("payload/rhel-coreos:test"), kver)
	// Stand-ins of the driver toolkit: the busybox OS image under other
	// names is enough to tell which one DTK_AUTO named.
	releaseDTK := env.PushOSImage(t, e.Registry.Ref("payload/driver-toolkit:release"), kver)
	flagDTK := env.PushOSImage(t, e.Registry.Ref("payload/driver-toolkit:flag"), kver)
	release := env.PushRelease(t, e.Registry.Ref("ocp/release:4.20.0"), "4.20.0", map[string]string{"driver-toolkit": releaseDTK, "rhel-coreos": osImage})
	f := newFixture(t, e, "", "", "")
	f.md.Spec.OSMapping.Sign = nil
	f.kubeconfig = e.Kube.Kubeconfig(t)

	var log bytes.Buffer
	if err := f.build(t, &log); err == nil || err.Error() != "ModuleDay0 openshift-kmm/kiln-hello: spec.osMapping.build.dockerfileConfigMap: ConfigMap openshift-kmm/kmm-kmod-dockerfile not found" {
		t.Fatalf("before the ConfigMap exists: %v", err)
	}
	dockerfile := "ARG DTK_AUTO\nARG OS_AUTO\nFROM ${DTK_AUTO} AS builder\nARG DTK_AUTO\nRUN echo ${DTK_AUTO} > /dtk-auto\n" +
		"FROM ${OS_AUTO}\nARG KERNEL_FULL_VERSION\nARG MOD_NAME\nCOPY --from=builder /dtk-auto /opt/dtk-auto\n" +
		"RUN mkdir -p /opt/lib/modules/${KERNEL_FULL_VERSION} && echo ${MOD_NAME} > /opt/lib/modules/${KERNEL_FULL_VERSION}/built-by\n"
	for _, ns := range []string{"openshift-kmm", payload.Namespace} {
		if err := e.Kube.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-kmm", Name: "kmm-kmod-dockerfile"}, Data: map[string]string{"dockerfile": dockerfile}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: payload.Namespace, Name: payload.OSImageURLMap}, Data: map[string]string{"baseOSContainerImage": osImage}},
	} {
		if err := e.Kube.Client.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
	}
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: payload.ClusterVersionName},
		Spec: configv1.ClusterVersionSpec{ClusterID: "5ea4a7a4-0d3b-4a4b-9c1e-2f0c8a8c7d11"}}
	if err := e.Kube.Client.Create(t.Context(), cv); err != nil {
		t.Fatal(err)
	}
	cv.Status = configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "4.20.0", Image: release}, VersionHash: "h"}
	if err := e.Kube.Client.Status().Update(t.Context(), cv); err != nil {
		t.Fatalf("writing ClusterVersion status: %v", err)
	}
	// The ModuleDay0 itself, whose status the build records.
	live := f.md.DeepCopy()
	live.ResourceVersion = ""
	if err := e.Kube.Client.Create(t.Context(), live); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := f.build(t, &log); err != nil {
		t.Fatalf("kmod-build from the cluster: %v\n%s", err, log.String())
	}
	if got := f.image(t); !strings.HasPrefix(got, e.Registry.Ref("kmods/rhcos@sha256:")) {
		t.Fatalf("KMOD_IMAGE_URL %s", got)
	}
	files, _ := kmodtest.FlattenImage(t, pull(t, f.md.Spec.OSMapping.ContainerImage))
	// MOD_NAME is the ModuleDay0's name; KERNEL_FULL_VERSION is the OS
	// image's /usr/lib/modules folder.
	if got := string(files["opt/lib/modules/"+kver+"/built-by"]); got != "kiln-hello\n" {
		t.Errorf("/opt/lib/modules/%s/built-by = %q, want the ModuleDay0's name", kver, got)
	}
	if got := string(files["opt/dtk-auto"]); got != releaseDTK+"\n" {
		t.Errorf("DTK_AUTO in the build = %q, want the release's driver-toolkit %s", got, releaseDTK)
	}
	// ModuleDay0 status reports what was built.
	if err := e.Kube.Client.Get(t.Context(), client.ObjectKeyFromObject(live), live); err != nil {
		t.Fatal(err)
	}
	built := meta.FindStatusCondition(live.Status.Conditions, kmmv1beta1.ConditionBuilt)
	if built == nil || built.Status != metav1.ConditionTrue || built.Reason != kmod.ReasonBuilt ||
		!strings.Contains(built.Message, "built "+f.image(t)) || live.Status.ImageDigest != f.result(t, "KMOD_IMAGE_DIGEST") {
		t.Errorf("ModuleDay0 status after the build: %+v, imageDigest %q", built, live.Status.ImageDigest)
	}

	// --dtk-image wins over the release (the ClusterVersion still names
	// one); a new containerImage tag so the build runs again.
	f.dtkImage = flagDTK
	f.md.Spec.OSMapping.ContainerImage = e.Registry.Ref("kmods/rhcos:flag")
	log.Reset()
	if err := f.build(t, &log); err != nil {
		t.Fatalf("kmod-build with --dtk-image: %v\n%s", err, log.String())
	}
	files, _ = kmodtest.FlattenImage(t, pull(t, f.md.Spec.OSMapping.ContainerImage))
	if got := string(files["opt/dtk-auto"]); got != flagDTK+"\n" || strings.Contains(log.String(), "release's driver-toolkit") {
		t.Errorf("with --dtk-image %s: DTK_AUTO in the build = %q; log:\n%s", flagDTK, got, log.String())
	}
}
