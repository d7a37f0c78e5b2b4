package trigger

import (
	"context"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/test/env"
)

// TestTriggerReadsThroughClusterMirrors: in cluster mode the trigger's own
// registry reads go through the cluster's mirror sets, as its runs do.
// The payload OS image is named on a source registry nothing listens on
// and lives, by the same digest, only on the mirror an
// ImageDigestMirrorSet names: the trigger still reads its version label
// (the KMM day-0 proposal's upgrade rule asks kmod-build to rebuild).
func TestTriggerReadsThroughClusterMirrors(t *testing.T) {
	h := newHarness(t)
	mirror := env.StartRegistry(t, env.RegistryOptions{})
	_, d := pushOSImage(t, mirror.Host, "9.6.20250601-0")
	const source = "127.0.0.1:1/openshift" // connections refused
	h.create(&configv1.ImageDigestMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: "payload"}, Spec: configv1.ImageDigestMirrorSetSpec{
		ImageDigestMirrors: []configv1.ImageDigestMirrors{{Source: source, Mirrors: []configv1.ImageMirror{configv1.ImageMirror(mirror.Host + "/openshift")}}},
	}})
	h.update(&corev1.ConfigMap{}, payload.OSImageURLMap, payload.Namespace, func(o client.Object) {
		o.(*corev1.ConfigMap).Data["baseOSContainerImage"] = source + "/os@" + d.String()
	})
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}, Spec: configv1.ClusterVersionSpec{ClusterID: "00000000-0000-0000-0000-000000000001"}}
	h.create(cv)
	cv.Status.Desired.Version = "4.19.0"
	if err := h.c.Status().Update(context.Background(), cv); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0", Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
	h.create(node)
	node.Status.NodeInfo.OSImage = "Red Hat Enterprise Linux CoreOS 418.94.202505010000-0 (Plow)"
	if err := h.c.Status().Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	md := &kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Name: "kmod-worker", Namespace: ns}}
	md.Spec.MachineConfigPoolSelector = map[string]string{"node-role.kubernetes.io/worker": ""}
	md.Spec.OSMapping.ContainerImage = mirror.Host + "/kmod/worker:1"
	md.Spec.OSMapping.ClusterUpgradeTriggerNodeUpgrade = true
	md.Spec.OSMapping.Build = &kmmv1beta1.Build{DockerfileConfigMap: corev1.LocalObjectReference{Name: "kmod-dockerfile"}}
	h.create(md, pool("worker", true), machineConfig("50-worker", "worker", "x=1"))
	h.start(200 * time.Millisecond)
	eventually(t, wait, "worker's run", func() bool { return len(h.runs("worker")) == 1 })
	if got := param(h.runs("worker")[0], "kmod-rebuild"); got != "true" {
		msg, _ := h.event("worker", ReasonCreated)
		t.Fatalf("kmod-rebuild = %q, want true: the OS image's label was not read through the mirror (RunCreated: %q)", got, msg)
	}
}
