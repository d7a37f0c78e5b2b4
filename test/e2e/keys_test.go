package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKeysIsolatedReadsThePodAsTektonMadeIt: the e2e's pod check fails a
// kmod-build pod whose buildah container mounts the cosign key, and one
// whose attest container lost it; it passes the pod Tekton makes from
// tasks/kmod-build.yaml.
func TestKeysIsolatedReadsThePodAsTektonMadeIt(t *testing.T) {
	mount := func(ws ...string) []corev1.VolumeMount {
		var out []corev1.VolumeMount
		for _, w := range ws {
			out = append(out, corev1.VolumeMount{Name: "ws-" + w, MountPath: "/workspace/" + w})
		}
		return out
	}
	pod := func(build, attest []corev1.VolumeMount) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kmod-build-pod"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "step-kmod-build", VolumeMounts: build}, {Name: "step-attest", VolumeMounts: attest},
		}}}
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"as Tekton makes it", pod(mount("work", "build-secrets"), mount("work", "cosign-key")), ""},
		{"key beside buildah", pod(mount("work", "cosign-key"), mount("work", "cosign-key")), "container step-kmod-build runs user code and mounts [/workspace/cosign-key]"},
		{"attest without the key", pod(mount("work"), mount("work")), "step-attest does not mount /workspace/cosign-key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := keysIsolated(c.pod)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("keysIsolated = %v, want %q", err, c.want)
			}
		})
	}
}
