package imagebuild

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/test/golden"
)

func TestGenerateContainerfileGolden(t *testing.T) {
	labels := map[string]string{LabelPool: "worker", LabelRenderedConfig: "rendered-worker-1", LabelFingerprint: "abc"}
	tests := []struct {
		name string
		in   ContainerfileInput
	}{
		{"config-only", ContainerfileInput{Base: "registry.example/ocp/rhcos@sha256:1111", Labels: labels}},
		{"extensions-realtime", ContainerfileInput{Base: "registry.example/ocp/rhcos@sha256:1111", ExtensionsImage: "registry.example/ocp/ext@sha256:2222",
			Extensions: []string{"usbguard", "kerberos", "usbguard"}, KernelType: "realtime", Labels: labels}},
		{"user-content", ContainerfileInput{Base: "registry.example/ocp/rhcos@sha256:1111", Labels: labels,
			EnableUnits: []string{"chronyd.service"}, User: "# agent\nRUN rpm-ostree install agent && ostree container commit\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bc, err := GenerateContainerfile(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			got.WriteString("==> Containerfile\n" + bc.Containerfile)
			names := make([]string, 0, len(bc.Files))
			for n := range bc.Files {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				got.WriteString("==> " + n + "\n" + bc.Files[n])
			}
			golden.Check(t, filepath.Join("testdata", "containerfile-"+tc.name+".golden"), []byte(got.String()))
		})
	}
}

func TestGenerateContainerfileErrors(t *testing.T) {
	tests := []struct {
		name string
		in   ContainerfileInput
		want string
	}{
		{"no base", ContainerfileInput{}, "no base image"},
		{"unknown extension", ContainerfileInput{Base: "b", ExtensionsImage: "e", Extensions: []string{"emacs"}}, `spec.extensions "emacs" is not supported`},
		{"unknown kernel", ContainerfileInput{Base: "b", ExtensionsImage: "e", KernelType: "fast"}, `spec.kernelType "fast"`},
		{"no extensions image", ContainerfileInput{Base: "b", Extensions: []string{"sysstat"}}, "--extensions-image"},
		{"user FROM", ContainerfileInput{Base: "b", User: "# x\nFROM fedora\nRUN true"}, "starts with FROM"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := GenerateContainerfile(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
