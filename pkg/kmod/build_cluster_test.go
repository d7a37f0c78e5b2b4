package kmod_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/test/env"
)

// TestKmodBuildFromCluster reads the Dockerfile ConfigMap and the payload
// ConfigMap from a real apiserver, and builds a one-stage Dockerfile (no
// sign section, so the target is containerImage itself).
func TestKmodBuildFromCluster(t *testing.T) {
	e := env.Start(t, env.Options{Kube: true, Registry: true, Buildah: true})
	_, kver, err := env.KernelHeaders()
	if err != nil {
		t.Fatal(err)
	}
	osImage := env.PushOSImage(t, e.Registry.Ref("payload/rhel-coreos:test"), kver)
	f := newFixture(t, e, "", "", "")
	f.md.Spec.OSMapping.Sign = nil
	f.kubeconfig = writeKubeconfig(t, e.Kube)

	var log bytes.Buffer
	if err := f.build(t, &log); err == nil || err.Error() != "ModuleDay0 openshift-kmm/kiln-hello: spec.osMapping.build.dockerfileConfigMap: ConfigMap openshift-kmm/kmm-kmod-dockerfile not found" {
		t.Fatalf("before the ConfigMap exists: %v", err)
	}
	dockerfile := "ARG OS_AUTO\nFROM ${OS_AUTO}\nARG KERNEL_FULL_VERSION\nARG MOD_NAME\nRUN mkdir -p /opt/lib/modules/${KERNEL_FULL_VERSION} && echo ${MOD_NAME} > /opt/lib/modules/${KERNEL_FULL_VERSION}/built-by\n"
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
	log.Reset()
	if err := f.build(t, &log); err != nil {
		t.Fatalf("kmod-build from the cluster: %v\n%s", err, log.String())
	}
	if got := f.result(t, "KMOD_IMAGE_URL"); !strings.HasPrefix(got, e.Registry.Ref("kmods/rhcos@sha256:")) {
		t.Fatalf("KMOD_IMAGE_URL %s", got)
	}
	files, _ := flattenImage(t, pull(t, f.md.Spec.OSMapping.ContainerImage))
	// MOD_NAME is the ModuleDay0's name; KERNEL_FULL_VERSION is the OS
	// image's /usr/lib/modules folder.
	if got := string(files["opt/lib/modules/"+kver+"/built-by"]); got != "kiln-hello\n" {
		t.Errorf("/opt/lib/modules/%s/built-by = %q, want the ModuleDay0's name", kver, got)
	}
}

func writeKubeconfig(t *testing.T, k *env.Kube) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["env"] = &clientcmdapi.Cluster{Server: k.Config.Host, CertificateAuthorityData: k.Config.CAData}
	kc.AuthInfos["env"] = &clientcmdapi.AuthInfo{ClientCertificateData: k.Config.CertData, ClientKeyData: k.Config.KeyData, Token: k.Config.BearerToken}
	kc.Contexts["env"] = &clientcmdapi.Context{Cluster: "env", AuthInfo: "env"}
	kc.CurrentContext = "env"
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}
