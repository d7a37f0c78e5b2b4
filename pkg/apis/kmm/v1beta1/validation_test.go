package v1beta1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/test/env"
)

func valid() kmmv1beta1.ModuleDay0Spec {
	return kmmv1beta1.ModuleDay0Spec{
		OSMapping: kmmv1beta1.OSMapping{
			Literal:        "Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)",
			ContainerImage: "quay.io/example/rhcos:414.92.202312311229-0",
		},
		MachineConfigPoolSelector: map[string]string{"node-role.kubernetes.io/worker": ""},
	}
}

func signSection() *kmmv1beta1.Sign {
	return &kmmv1beta1.Sign{
		UnsignedImage: "quay.io/example/rhcos:414.92.202312311229-0-unsigned",
		CertSecret:    corev1.LocalObjectReference{Name: "kmm-kmod-signing-cert"},
		KeySecret:     corev1.LocalObjectReference{Name: "kmm-kmod-signing-key"},
		FilesToSign:   []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/kmm_ci_a.ko"},
	}
}

// TestModuleDay0Validation runs the CRD's schema and CEL rules in the real
// apiserver: the KMM day-0 proposal's examples are accepted, malformed objects are
// rejected with a message naming the field.
func TestModuleDay0Validation(t *testing.T) {
	k := env.StartKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := k.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kmm"}}); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name    string
		mutate  func(*kmmv1beta1.ModuleDay0Spec)
		wantErr string // empty: accepted
	}{
		{"proposal literal and image", func(*kmmv1beta1.ModuleDay0Spec) {}, ""},
		{"proposal build", func(s *kmmv1beta1.ModuleDay0Spec) {
			s.OSMapping.Build = &kmmv1beta1.Build{
				Secrets:             []corev1.LocalObjectReference{{Name: "build-secret"}},
				DockerfileConfigMap: corev1.LocalObjectReference{Name: "kmm-kmod-dockerfile"},
			}
		}, ""},
		{"proposal sign", func(s *kmmv1beta1.ModuleDay0Spec) { s.OSMapping.Sign = signSection() }, ""},
		{"sign of the build output", func(s *kmmv1beta1.ModuleDay0Spec) {
			s.OSMapping.Build = &kmmv1beta1.Build{DockerfileConfigMap: corev1.LocalObjectReference{Name: "df"}}
			s.OSMapping.Sign = signSection()
			s.OSMapping.Sign.UnsignedImage = ""
		}, ""},
		{"proposal upgrade trigger", func(s *kmmv1beta1.ModuleDay0Spec) { s.OSMapping.ClusterUpgradeTriggerNodeUpgrade = true }, ""},
		{"empty pool selector", func(s *kmmv1beta1.ModuleDay0Spec) { s.MachineConfigPoolSelector = map[string]string{} },
			"spec.machineConfigPoolSelector: Invalid value: 0: spec.machineConfigPoolSelector in body should have at least 1 properties"},
		{"missing pool selector", func(s *kmmv1beta1.ModuleDay0Spec) { s.MachineConfigPoolSelector = nil },
			`spec.machineConfigPoolSelector: Required value`},
		{"empty containerImage", func(s *kmmv1beta1.ModuleDay0Spec) { s.OSMapping.ContainerImage = "" },
			"spec.osMapping.containerImage: Invalid value: \"\": spec.osMapping.containerImage in body should be at least 1 chars long"},
		{"containerImage with a space", func(s *kmmv1beta1.ModuleDay0Spec) { s.OSMapping.ContainerImage = "quay.io/x y" },
			"spec.osMapping.containerImage: Invalid value: \"string\": containerImage must be an image reference without spaces"},
		{"sign without unsignedImage or build", func(s *kmmv1beta1.ModuleDay0Spec) {
			s.OSMapping.Sign = signSection()
			s.OSMapping.Sign.UnsignedImage = ""
		}, "spec.osMapping: Invalid value: \"object\": sign.unsignedImage is required when osMapping has no build section"},
		{"unsignedImage equals containerImage", func(s *kmmv1beta1.ModuleDay0Spec) {
			s.OSMapping.Sign = signSection()
			s.OSMapping.Sign.UnsignedImage = s.OSMapping.ContainerImage
		}, "spec.osMapping: Invalid value: \"object\": sign.unsignedImage must differ from containerImage"},
		{"relative file to sign", func(s *kmmv1beta1.ModuleDay0Spec) {
			s.OSMapping.Sign = signSection()
			s.OSMapping.Sign.FilesToSign = []string{"lib/modules/a.ko"}
		}, "spec.osMapping.sign.filesToSign[0]: Invalid value: \"string\": filesToSign entries must be absolute paths"},
		{"no files to sign", func(s *kmmv1beta1.ModuleDay0Spec) {
			s.OSMapping.Sign = signSection()
			s.OSMapping.Sign.FilesToSign = []string{}
		}, "spec.osMapping.sign.filesToSign: Invalid value: 0: spec.osMapping.sign.filesToSign in body should have at least 1 items"},
		{"key secret without name", func(s *kmmv1beta1.ModuleDay0Spec) {
			s.OSMapping.Sign = signSection()
			s.OSMapping.Sign.KeySecret.Name = ""
		}, "spec.osMapping.sign.keySecret: Invalid value: \"object\": keySecret.name must not be empty"},
		{"dockerfile ConfigMap without name", func(s *kmmv1beta1.ModuleDay0Spec) {
			s.OSMapping.Build = &kmmv1beta1.Build{}
		}, "spec.osMapping.build.dockerfileConfigMap: Invalid value: \"object\": dockerfileConfigMap.name must not be empty"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := valid()
			tc.mutate(&spec)
			obj := &kmmv1beta1.ModuleDay0{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("md0-%d", i), Namespace: "kmm"},
				Spec:       spec,
			}
			err := k.Client.Create(ctx, obj)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("accepted; want error %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error:\n got %v\nwant %s", err, tc.wantErr)
			}
		})
	}
}
