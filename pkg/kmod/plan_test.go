package kmod

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/kmodbuild"
)

const (
	img      = "quay.io/ybettan/rhcos:414.92.202312311229-0"
	unsigned = "quay.io/ybettan/rhcos:414.92.202312311229-0-unsigned"
)

func md(build, sign bool, unsignedImage string) *kmmv1beta1.ModuleDay0 {
	m := &kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Name: "kmm-ci", Namespace: "kmm"}}
	m.Spec.OSMapping.ContainerImage = img
	if build {
		m.Spec.OSMapping.Build = &kmmv1beta1.Build{DockerfileConfigMap: corev1.LocalObjectReference{Name: "kmm-kmod-dockerfile"}}
	}
	if sign {
		m.Spec.OSMapping.Sign = &kmmv1beta1.Sign{UnsignedImage: unsignedImage, FilesToSign: []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/kmm_ci_a.ko"}}
	}
	return m
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name    string
		md      *kmmv1beta1.ModuleDay0
		facts   Facts
		want    Plan
		wantErr string
	}{
		{"already the osImageURL", md(true, true, ""), Facts{MCOSImageURL: img}, Plan{Reason: "containerImage is already the MachineConfig's osImageURL"}, ""},
		{"image exists", md(true, false, ""), Facts{ImageExists: true}, Plan{Reason: "containerImage exists; nothing to build or sign"}, ""},
		{"upgrade rebuilds an existing image", md(true, false, ""), Facts{ImageExists: true, MCOSImageURL: img, Rebuild: true}, Plan{Build: true, BuildTarget: img, Reason: "build " + img}, ""},
		{"upgrade rebuild with neither section", md(false, false, ""), Facts{ImageExists: true, Rebuild: true}, Plan{},
			"ModuleDay0 kmm/kmm-ci: a cluster upgrade asks for a rebuild of " + img + ", but there is no build or sign section"},
		{"build only", md(true, false, ""), Facts{}, Plan{Build: true, BuildTarget: img, Reason: "build " + img}, ""},
		{"sign an existing unsigned image", md(false, true, unsigned), Facts{UnsignedExists: true},
			Plan{Sign: true, BuildTarget: img, SignSource: unsigned, Reason: "sign " + unsigned + " into " + img}, ""},
		{"build then sign, derived unsigned tag", md(true, true, ""), Facts{},
			Plan{Build: true, Sign: true, BuildTarget: unsigned, SignSource: unsigned, Reason: "build " + unsigned + ", then sign it into " + img}, ""},
		{"sign without unsigned image or build", md(false, true, unsigned), Facts{}, Plan{},
			"ModuleDay0 kmm/kmm-ci: spec.osMapping.sign.unsignedImage " + unsigned + " does not exist and there is no build section to make it"},
		{"neither build nor sign", md(false, false, ""), Facts{}, Plan{},
			"ModuleDay0 kmm/kmm-ci: spec.osMapping.containerImage " + img + " does not exist and there is no build or sign section to make it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decide(tc.md, tc.facts)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestUnsignedRef: the unsigned image is containerImage's repository with
// "-unsigned" after its tag, or the tag "unsigned" when it has none; a
// digest is never part of it, and a registry port is no tag.
func TestUnsignedRef(t *testing.T) {
	const dig = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct{ ref, want, wantErr string }{
		{ref: "quay.io/org/mod:v1", want: "quay.io/org/mod:v1-unsigned"},
		{ref: "registry:5000/repo", want: "registry:5000/repo:unsigned"},
		{ref: "registry:5000/repo:v2", want: "registry:5000/repo:v2-unsigned"},
		{ref: "quay.io/org/mod@" + dig, want: "quay.io/org/mod:unsigned"},
		{ref: "registry:5000/org/mod@" + dig, want: "registry:5000/org/mod:unsigned"},
		{ref: "quay.io/org/mod:v1@" + dig, want: "quay.io/org/mod:v1-unsigned"},
		{ref: "quay.io/org/mod:" + strings.Repeat("t", 128), wantErr: `spec.osMapping.containerImage "quay.io/org/mod:` + strings.Repeat("t", 128) + `": making the unsigned image's tag: `},
		{ref: "quay.io/Org/mod:v1", wantErr: `spec.osMapping.containerImage "quay.io/Org/mod:v1": `},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			got, err := unsignedRef(tc.ref)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("unsignedRef = %q, %v; want an error starting %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("unsignedRef = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

const seedDockerfile = `
ARG DTK_AUTO
ARG OS_AUTO

FROM ${DTK_AUTO} as builder

ARG KERNEL_VERSION
# $NOT_AN_ARG in a comment
RUN KERNEL_SRC_DIR=/lib/modules/${KERNEL_VERSION}/build make all

FROM ${OS_AUTO}

ARG KERNEL_VERSION

COPY --from=builder /usr/src/kernel-module-management/ci/kmm-kmod/kmm_ci_a.ko /opt/lib/modules/${KERNEL_VERSION}/
RUN depmod -b /opt $KERNEL_VERSION
`

func TestBuildArgs(t *testing.T) {
	p := Payload{OSImage: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:aa", DTKImage: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:dd"}
	const kver = "5.14.0-427.13.1.el9_4.x86_64"
	if d := cmp.Diff([]string{"DTK_AUTO", "KERNEL_VERSION", "OS_AUTO"}, DockerfileArgs(seedDockerfile)); d != "" {
		t.Errorf("DockerfileArgs (-want +got):\n%s", d)
	}
	args, err := BuildArgs(md(true, false, ""), seedDockerfile, p, kver)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{kmodbuild.ArgOSAuto: p.OSImage, kmodbuild.ArgDTKAuto: p.DTKImage, kmodbuild.ArgKernelVersion: kver, kmodbuild.ArgKernelFullVersion: kver, kmodbuild.ArgModName: "kmm-ci"}
	if d := cmp.Diff(want, args); d != "" {
		t.Errorf("args (-want +got):\n%s", d)
	}
	bad := []struct{ name, dockerfile, kver, wantErr string }{
		{"DTK without OS", "FROM ${DTK_AUTO}\nRUN make\nFROM quay.io/custom/os:1\n", kver, "uses DTK_AUTO without OS_AUTO"},
		{"no kernel", seedDockerfile, "", "the kernel version of the OS image is unknown"},
	}
	for _, tc := range bad {
		if _, err := BuildArgs(md(true, false, ""), tc.dockerfile, p, tc.kver); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.wantErr)
		}
	}
	if _, err := BuildArgs(md(true, false, ""), seedDockerfile, Payload{OSImage: p.OSImage}, kver); err == nil || !strings.Contains(err.Error(), "no driver-toolkit image") {
		t.Errorf("missing DTK in payload: %v", err)
	}
}

func FuzzDockerfileArgs(f *testing.F) {
	f.Add(seedDockerfile)
	f.Add("FROM $")
	f.Add("${}${A${B}}")
	f.Fuzz(func(t *testing.T, s string) {
		for _, a := range DockerfileArgs(s) {
			if a == "" || !strings.Contains(s, a) {
				t.Fatalf("arg %q not in input", a)
			}
		}
	})
}
