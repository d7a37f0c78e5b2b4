package kmod_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

// TestKmodSignStepRefusesEmptyFilesToSign: the kmod-sign step, given a
// ModuleDay0 whose filesToSign is empty (directory mode has no apiserver
// to apply the CRD's MinItems), fails naming the ModuleDay0 and the field,
// and pushes nothing to containerImage.
func TestKmodSignStepRefusesEmptyFilesToSign(t *testing.T) {
	r := env.StartRegistry(t, env.RegistryOptions{})
	unsigned, target := r.Ref("kmods/rhcos:unsigned"), r.Ref("kmods/rhcos:signed")
	src, _ := name.ParseReference(unsigned, name.Insecure)
	if err := remote.Write(src, kmodtest.UnsignedImage(t, true)); err != nil {
		t.Fatal(err)
	}
	md := &kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Name: "realtime-kmod", Namespace: "kmm"}, Spec: kmmv1beta1.ModuleDay0Spec{
		MachineConfigPoolSelector: map[string]string{"node-role.kubernetes.io/worker": ""},
		OSMapping: kmmv1beta1.OSMapping{ContainerImage: target, Sign: &kmmv1beta1.Sign{UnsignedImage: unsigned,
			CertSecret: corev1.LocalObjectReference{Name: "cert"}, KeySecret: corev1.LocalObjectReference{Name: "key"}, FilesToSign: []string{}}},
	}}
	work := t.TempDir()
	b, _ := json.Marshal(md)
	p := workspace.Workspace{Root: work}.ModuleDay0Path()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cert, key := env.ModuleSigningPair(t, "kiln kmod signer")
	o := &kmod.SignOptions{Options: step.Options{Work: work, ResultsDir: filepath.Join(work, "results"), Pool: "worker"},
		RegistryOptions: registry.RegistryOptions{Insecure: []string{r.Host}}, KubeOptions: kube.KubeOptions{Source: "dir:" + work},
		CertFile: cert, KeyFile: key, Hash: "sha256"}
	var out bytes.Buffer
	err := o.Run(t.Context(), step.Streams{Out: &out, Err: &out})
	want := "ModuleDay0 kmm/realtime-kmod: spec.osMapping.sign.filesToSign: empty"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v, want %q\n%s", err, want, out.String())
	}
	dst, _ := name.ParseReference(target, name.Insecure)
	if _, err := remote.Head(dst); err == nil {
		t.Fatal("containerImage was pushed")
	}
	if _, err := os.Stat(filepath.Join(work, "results", "KMOD_IMAGE_DIGEST")); err == nil {
		t.Fatal("a KMOD_IMAGE_DIGEST result was written")
	}
}
