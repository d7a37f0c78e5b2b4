package trigger

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

const (
	caHost   = "registry.example:5000"
	caPath   = registry.CertsDir + "/" + caHost + "/ca.crt"
	caConfig = "registry-cas"
)

// dockerConfig is a pull secret's .dockerconfigjson.
func dockerConfig(pass string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte("kiln:" + pass))
	return fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, caHost, auth)
}

func selfSigned(t *testing.T) []byte {
	t.Helper()
	cert, _, err := env.SelfSigned(caHost)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// clusterRegistries creates what an OpenShift cluster has: the pull
// secret, a trusted CA named by the image config, a mirror set and the
// proxy.
func (h *harness) clusterRegistries(ca []byte) {
	h.t.Helper()
	h.create(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OpenShiftConfigNamespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: PullSecretName, Namespace: OpenShiftConfigNamespace},
			Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: dockerConfig("one")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: caConfig, Namespace: OpenShiftConfigNamespace},
			Data: map[string]string{strings.ReplaceAll(caHost, ":", ".."): string(ca)}},
		&configv1.Image{ObjectMeta: metav1.ObjectMeta{Name: clusterConfigName},
			Spec: configv1.ImageSpec{AdditionalTrustedCA: configv1.ConfigMapNameReference{Name: caConfig}}},
		&configv1.ImageDigestMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: "release"}, Spec: configv1.ImageDigestMirrorSetSpec{
			ImageDigestMirrors: []configv1.ImageDigestMirrors{{Source: "quay.io/openshift", Mirrors: []configv1.ImageMirror{caHost + "/openshift"}}},
		}},
		&configv1.Proxy{ObjectMeta: metav1.ObjectMeta{Name: clusterConfigName}},
	)
	h.setProxy("http://proxy.example:3128", ".cluster.local,.svc,10.0.0.0/16")
}

// setProxy plays the network operator: it writes the Proxy's status.
func (h *harness) setProxy(http, no string) {
	h.t.Helper()
	for i := 0; ; i++ {
		var p configv1.Proxy
		if err := h.c.Get(context.Background(), client.ObjectKey{Name: clusterConfigName}, &p); err != nil {
			h.t.Fatal(err)
		}
		p.Status = configv1.ProxyStatus{HTTPProxy: http, NoProxy: no}
		err := h.c.Status().Update(context.Background(), &p)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || i > 10 {
			h.t.Fatalf("updating the Proxy's status: %v", err)
		}
	}
}

// declareRegistries makes the node-image Pipeline declare the registries
// workspace (the Tasks' optional registries folder), if it does not yet.
func (h *harness) declareRegistries() {
	h.t.Helper()
	h.update(&pipelinev1.Pipeline{}, "kiln-node-image", ns, func(o client.Object) {
		p := o.(*pipelinev1.Pipeline)
		if !slices.ContainsFunc(p.Spec.Workspaces, func(w pipelinev1.PipelineWorkspaceDeclaration) bool { return w.Name == WorkspaceRegistries }) {
			p.Spec.Workspaces = append(p.Spec.Workspaces, pipelinev1.PipelineWorkspaceDeclaration{Name: WorkspaceRegistries, Optional: true})
		}
	})
}

func binding(pr *pipelinev1.PipelineRun, name string) *pipelinev1.WorkspaceBinding {
	for i := range pr.Spec.Workspaces {
		if pr.Spec.Workspaces[i].Name == name {
			return &pr.Spec.Workspaces[i]
		}
	}
	return nil
}

func envOf(pr *pipelinev1.PipelineRun) map[string]string {
	out := map[string]string{}
	if t := pr.Spec.TaskRunTemplate.PodTemplate; t != nil {
		for _, e := range t.Env {
			out[e.Name] = e.Value
		}
	}
	return out
}

// pullSecretCopy is kiln's copy, or nil.
func (h *harness) pullSecretCopy() *corev1.Secret {
	h.t.Helper()
	var s corev1.Secret
	err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: PullSecretCopy}, &s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return &s
}

// mounted is the registries folder a Task of pr sees now: the ConfigMap
// as it is, through the items pr binds.
func (h *harness) mounted(pr *pipelinev1.PipelineRun) map[string][]byte {
	h.t.Helper()
	b := binding(pr, WorkspaceRegistries)
	if b == nil || b.ConfigMap == nil || b.ConfigMap.Name != RegistriesConfigMap {
		h.t.Fatalf("run %s binds registries as %+v", pr.Name, b)
	}
	var cm corev1.ConfigMap
	if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: RegistriesConfigMap}, &cm); err != nil {
		h.t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, it := range b.ConfigMap.Items {
		if v, ok := cm.Data[it.Key]; ok {
			out[it.Path] = []byte(v)
		} else if v, ok := cm.BinaryData[it.Key]; ok {
			out[it.Path] = v
		}
	}
	return out
}

// TestClusterRegistriesReachRunsWithoutRebuilds: the run gets the
// cluster's pull secret, registries folder and proxy; a change of any of
// them starts no run but reaches the copies (and so the running run's next
// Tasks), and the next run carries it.
func TestClusterRegistriesReachRunsWithoutRebuilds(t *testing.T) {
	h := newHarness(t)
	caOne := selfSigned(t)
	h.clusterRegistries(caOne)
	h.declareRegistries()
	h.create(pool("worker", true), machineConfig("00-worker", "worker", "a=1"))
	h.start(200 * time.Millisecond)
	ctx := context.Background()

	eventually(t, wait, "worker's first run", func() bool { return len(h.runs("worker")) == 1 })
	first := h.runs("worker")[0]
	var conf []byte

	t.Run("the run binds the copies and carries the proxy", func(t *testing.T) {
		cp := h.pullSecretCopy()
		if cp == nil || cp.Type != corev1.SecretTypeDockerConfigJson || !bytes.Equal(cp.Data[corev1.DockerConfigJsonKey], dockerConfig("one")) ||
			cp.Labels[LabelManagedBy] != ManagedBy || cp.Annotations[AnnotCopiedFrom] != "openshift-config/pull-secret" {
			t.Fatalf("the pull secret's copy is missing or differs from its source (type, labels, annotations, data)")
		}
		auth := binding(first, WorkspaceRegistryAuth)
		if auth == nil || auth.Secret == nil || auth.Secret.SecretName != PullSecretCopy ||
			!slices.Equal(auth.Secret.Items, []corev1.KeyToPath{{Key: corev1.DockerConfigJsonKey, Path: "config.json"}}) {
			t.Fatalf("registry-auth binding %+v", auth)
		}
		folder := h.mounted(first)
		conf = folder[registry.RegistriesConfFile]
		if len(conf) == 0 {
			t.Errorf("the mounted registries folder has no %s: %v", registry.RegistriesConfFile, slices.Sorted(maps.Keys(folder)))
		}
		if !bytes.Equal(folder[caPath], caOne) {
			t.Errorf("the mounted registries folder has no %s with the image config's trusted CA: %v", caPath, slices.Sorted(maps.Keys(folder)))
		}
		want := map[string]string{"HTTP_PROXY": "http://proxy.example:3128", "http_proxy": "http://proxy.example:3128",
			"NO_PROXY": ".cluster.local,.svc,10.0.0.0/16", "no_proxy": ".cluster.local,.svc,10.0.0.0/16"}
		if got := envOf(first); !maps.Equal(got, want) {
			t.Errorf("pod template env %v, want %v", got, want)
		}
	})

	t.Run("pull secret, mirror set, trusted CA, image config and proxy changes start no run but reach the copies", func(t *testing.T) {
		caTwo := selfSigned(t)
		h.update(&corev1.Secret{}, PullSecretName, OpenShiftConfigNamespace, func(o client.Object) {
			o.(*corev1.Secret).Data[corev1.DockerConfigJsonKey] = dockerConfig("two")
		})
		h.update(&configv1.ImageDigestMirrorSet{}, "release", "", func(o client.Object) {
			m := &o.(*configv1.ImageDigestMirrorSet).Spec.ImageDigestMirrors[0]
			m.Mirrors = append(m.Mirrors, "mirror.example/openshift")
		})
		h.update(&corev1.ConfigMap{}, caConfig, OpenShiftConfigNamespace, func(o client.Object) {
			o.(*corev1.ConfigMap).Data[strings.ReplaceAll(caHost, ":", "..")] = string(caTwo)
		})
		h.update(&configv1.Image{}, clusterConfigName, "", func(o client.Object) {
			o.(*configv1.Image).Spec.RegistrySources.InsecureRegistries = []string{"insecure.example:5000"}
		})
		h.setProxy("http://proxy-two.example:3128", ".cluster.local,.svc,10.0.0.0/16")
		eventually(t, wait, "the copies to follow", func() bool {
			cp := h.pullSecretCopy()
			folder := h.mounted(first)
			return cp != nil && bytes.Equal(cp.Data[corev1.DockerConfigJsonKey], dockerConfig("two")) &&
				bytes.Equal(folder[caPath], caTwo) && !bytes.Equal(folder[registry.RegistriesConfFile], conf)
		})
		consistently(t, 3*time.Second, "a registries change started a run", func() bool { return len(h.runs("worker")) != 1 })
	})

	t.Run("the next run carries the new proxy", func(t *testing.T) {
		h.setKarg("00-worker", "a=2")
		eventually(t, wait, "worker's second run", func() bool { return len(h.runs("worker")) == 2 })
		next := h.runs("worker")[0]
		if got := envOf(next)["HTTP_PROXY"]; got != "http://proxy-two.example:3128" {
			t.Errorf("HTTP_PROXY %q", got)
		}
		if binding(next, WorkspaceRegistryAuth) == nil || binding(next, WorkspaceRegistries) == nil {
			t.Errorf("workspaces %+v", next.Spec.Workspaces)
		}
	})

	t.Run("a hand edit of the registries ConfigMap is undone", func(t *testing.T) {
		var cm corev1.ConfigMap
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: RegistriesConfigMap}, &cm); err != nil {
			t.Fatal(err)
		}
		want := cm.Data
		h.update(&corev1.ConfigMap{}, RegistriesConfigMap, ns, func(o client.Object) {
			o.(*corev1.ConfigMap).Data = map[string]string{registry.RegistriesConfFile: "# edited by hand\n"}
		})
		eventually(t, wait, "the trigger to restore kiln-registries", func() bool {
			var now corev1.ConfigMap
			return h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: RegistriesConfigMap}, &now) == nil && maps.Equal(now.Data, want)
		})
	})

	t.Run("without the cluster's pull secret the copy goes, and runs bind none", func(t *testing.T) {
		if err := h.c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: PullSecretName, Namespace: OpenShiftConfigNamespace}}); err != nil {
			t.Fatal(err)
		}
		eventually(t, wait, "the copy's deletion", func() bool { return h.pullSecretCopy() == nil })
		h.setKarg("00-worker", "a=3")
		eventually(t, wait, "worker's third run", func() bool { return len(h.runs("worker")) == 3 })
		if b := binding(h.runs("worker")[0], WorkspaceRegistryAuth); b != nil {
			t.Errorf("registry-auth bound to %+v without a cluster pull secret", b)
		}
	})
}

// TestInvalidRegistriesHoldRunsUntilFixed: an image config naming a
// trusted CA ConfigMap that does not exist makes no run and says so on
// the pool; creating the ConfigMap lets the run go, although it is no
// input of the pool.
func TestInvalidRegistriesHoldRunsUntilFixed(t *testing.T) {
	h := newHarness(t)
	h.create(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OpenShiftConfigNamespace}},
		&configv1.Image{ObjectMeta: metav1.ObjectMeta{Name: clusterConfigName},
			Spec: configv1.ImageSpec{AdditionalTrustedCA: configv1.ConfigMapNameReference{Name: caConfig}}},
		pool("worker", true), machineConfig("00-worker", "worker", "a=1"),
	)
	h.start(200 * time.Millisecond)
	msg, ok := h.event("worker", ReasonRegistries)
	if !ok || !strings.Contains(msg, "spec.additionalTrustedCA") || !strings.Contains(msg, OpenShiftConfigNamespace+"/"+caConfig) {
		t.Fatalf("%s event on the pool: %q (found %v)", ReasonRegistries, msg, ok)
	}
	if n := len(h.runs("worker")); n != 0 {
		t.Fatalf("%d runs with an invalid image config", n)
	}
	ca := selfSigned(t)
	h.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: caConfig, Namespace: OpenShiftConfigNamespace},
		Data: map[string]string{strings.ReplaceAll(caHost, ":", ".."): string(ca)}})
	eventually(t, wait, "the run once the CA exists", func() bool { return len(h.runs("worker")) == 1 })
}
