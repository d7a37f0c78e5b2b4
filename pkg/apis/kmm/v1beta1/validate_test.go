package v1beta1_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
)

// Validate, what folder mode has in place of the apiserver, refuses the
// image references the CRD's CEL rules refuse, with the apiserver's
// message, and references that do not parse, naming the field.
func TestValidateRefusesBadImageReferences(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*kmmv1beta1.ModuleDay0Spec)
		wantErr string // empty: accepted
	}{
		{"valid", func(*kmmv1beta1.ModuleDay0Spec) {}, ""},
		{"sign with its own unsigned image", func(s *kmmv1beta1.ModuleDay0Spec) { s.OSMapping.Sign = signSection() }, ""},
		{"unsignedImage equals containerImage", func(s *kmmv1beta1.ModuleDay0Spec) {
			s.OSMapping.Sign = signSection()
			s.OSMapping.Sign.UnsignedImage = s.OSMapping.ContainerImage
		}, `ModuleDay0 kmm/md0: spec.osMapping: Invalid value: "object": sign.unsignedImage must differ from containerImage`},
		{"unsignedImage names containerImage another way", func(s *kmmv1beta1.ModuleDay0Spec) {
			s.OSMapping.ContainerImage = "quay.io/example/rhcos"
			s.OSMapping.Sign = signSection()
			s.OSMapping.Sign.UnsignedImage = "quay.io/example/rhcos:latest"
		}, `spec.osMapping.sign.unsignedImage "quay.io/example/rhcos:latest": names the same image as spec.osMapping.containerImage "quay.io/example/rhcos"`},
		{"containerImage that is no reference", func(s *kmmv1beta1.ModuleDay0Spec) { s.OSMapping.ContainerImage = "not-a-ref;$(id)" },
			`ModuleDay0 kmm/md0: spec.osMapping.containerImage "not-a-ref;$(id)": could not parse reference: not-a-ref;$(id)`},
		{"containerImage with an empty path component", func(s *kmmv1beta1.ModuleDay0Spec) { s.OSMapping.ContainerImage = "quay.io//example/kmod:v1" },
			`ModuleDay0 kmm/md0: spec.osMapping.containerImage "quay.io//example/kmod:v1": invalid reference format`},
		{"empty containerImage", func(s *kmmv1beta1.ModuleDay0Spec) { s.OSMapping.ContainerImage = "" },
			`spec.osMapping.containerImage "": could not parse reference`},
		{"unsignedImage that is no reference", func(s *kmmv1beta1.ModuleDay0Spec) {
			s.OSMapping.Sign = signSection()
			s.OSMapping.Sign.UnsignedImage = "quay.io/x:$(id)"
		}, `spec.osMapping.sign.unsignedImage "quay.io/x:$(id)": could not parse reference: quay.io/x:$(id)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := valid()
			c.mutate(&spec)
			md := &kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Name: "md0", Namespace: "kmm"}, Spec: spec}
			err := md.Validate()
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v, want %q", err, c.wantErr)
			}
		})
	}
}
