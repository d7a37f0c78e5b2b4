package trigger

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/test/env"
)

// TestKmodUpgradeRebuild: the KMM day-0 proposal's "Cluster upgrade". The payload's OS
// (its image's version label, read from a real registry) is a new
// y-stream and the pool's nodes still run the old one: with
// clusterUpgradeTriggerNodeUpgrade the run asks kmod-build to rebuild;
// without it, it does not.
func TestKmodUpgradeRebuild(t *testing.T) {
	h := newHarness(t)
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ref, d := pushOSImage(t, reg.Host, "9.6.20250601-0")
	h.update(&corev1.ConfigMap{}, payload.OSImageURLMap, payload.Namespace, func(o client.Object) {
		o.(*corev1.ConfigMap).Data["baseOSContainerImage"] = ref.Context().Digest(d.String()).String()
	})
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}, Spec: configv1.ClusterVersionSpec{ClusterID: "00000000-0000-0000-0000-000000000001"}}
	h.create(cv)
	cv.Status.Desired.Version = "4.19.0"
	if err := h.c.Status().Update(context.Background(), cv); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"worker", "infra"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: p + "-0", Labels: map[string]string{"node-role.kubernetes.io/" + p: ""}}}
		h.create(node)
		node.Status.NodeInfo.OSImage = "Red Hat Enterprise Linux CoreOS 418.94.202505010000-0 (Plow)"
		if err := h.c.Status().Update(context.Background(), node); err != nil {
			t.Fatal(err)
		}
		md := &kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Name: "kmod-" + p, Namespace: ns}}
		md.Spec.MachineConfigPoolSelector = map[string]string{"node-role.kubernetes.io/" + p: ""}
		md.Spec.OSMapping.ContainerImage = reg.Host + "/kmod/" + p + ":1"
		md.Spec.OSMapping.ClusterUpgradeTriggerNodeUpgrade = p == "worker"
		md.Spec.OSMapping.Build = &kmmv1beta1.Build{DockerfileConfigMap: corev1.LocalObjectReference{Name: "kmod-dockerfile"}}
		h.create(md, pool(p, true), machineConfig("50-"+p, p, "x=1"))
	}
	h.start(200 * time.Millisecond)
	eventually(t, wait, "a run per pool", func() bool { return len(h.runs("worker")) == 1 && len(h.runs("infra")) == 1 })
	if got := param(h.runs("worker")[0], "kmod-rebuild"); got != "true" {
		t.Fatalf("worker run kmod-rebuild = %q, want true", got)
	}
	if msg, _ := h.event("worker", ReasonCreated); !strings.Contains(msg, "kmod: nodes run") {
		t.Fatalf("RunCreated event does not say why kmod rebuilds: %q", msg)
	}
	if got := param(h.runs("infra")[0], "kmod-rebuild"); got != "" {
		t.Fatalf("infra (clusterUpgradeTriggerNodeUpgrade false) run kmod-rebuild = %q", got)
	}
}

// pushOSImage pushes a payload OS image stand-in, whose version label is
// what the trigger reads, to host/openshift/os:4.19.
func pushOSImage(t *testing.T, host, version string) (name.Reference, v1.Hash) {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf.Config.Labels = map[string]string{"version": version}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(host + "/openshift/os:4.19")
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref, d
}
