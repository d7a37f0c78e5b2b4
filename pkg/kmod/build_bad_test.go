package kmod_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

// TestKmodBadInputs: every bad input fails with the object, field and
// reason named, and pushes nothing (neither containerImage nor the
// unsigned image exists afterwards, and no result is written).
func TestKmodBadInputs(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	_, kver, err := env.KernelHeaders()
	if err != nil {
		t.Fatal(err)
	}
	osImage := env.PushOSImage(t, e.Registry.Ref("payload/rhel-coreos:test"), kver)
	unsigned := e.Registry.Ref("kmods/given:unsigned")
	srcRef, _ := name.ParseReference(unsigned, name.Insecure)
	if err := remote.Write(srcRef, kmodtest.UnsignedImage(t, true)); err != nil {
		t.Fatal(err)
	}
	noDTKRelease := env.PushRelease(t, e.Registry.Ref("ocp/release:no-dtk"), "4.20.0", map[string]string{"rhel-coreos": osImage})
	const md = "ModuleDay0 openshift-kmm/kiln-hello: "
	failing := "ARG OS_AUTO\nFROM ${OS_AUTO}\nRUN echo kiln-step-output-before-failure && exit 3\n"
	other := kmodtest.NewKeyPair(t, "someone else")

	cases := []struct {
		name string
		sign bool // run kmod-sign on sign.unsignedImage instead of kmod-build
		edit func(t *testing.T, f *fixture)
		want func(f *fixture) string // the exact error, or its exact start when tail is set
		tail string                  // text the error must also carry (the build log)
	}{
		{
			name: "missing ConfigMap",
			edit: func(t *testing.T, f *fixture) { os.Remove(filepath.Join(f.manifests, "dockerfile.yaml")) },
			want: func(*fixture) string {
				return md + "spec.osMapping.build.dockerfileConfigMap: ConfigMap openshift-kmm/kmm-kmod-dockerfile not found"
			},
		},
		{
			name: "ConfigMap without dockerfile key",
			edit: func(t *testing.T, f *fixture) {
				writeFile(t, filepath.Join(f.manifests, "dockerfile.yaml"), configMapYAML("kmm-kmod-dockerfile", "Dockerfile", seedDockerfile()))
			},
			want: func(*fixture) string {
				return md + `spec.osMapping.build.dockerfileConfigMap: ConfigMap openshift-kmm/kmm-kmod-dockerfile has no "dockerfile" key`
			},
		},
		{
			name: "build secret not mounted",
			edit: func(t *testing.T, f *fixture) { os.RemoveAll(filepath.Join(f.secrets, "build-secret")) },
			want: func(f *fixture) string {
				return md + `spec.osMapping.build.secrets[0].name "build-secret": not mounted: no folder build-secret/ and no file build-secret_<key> in ` + f.secrets
			},
		},
		{
			name: "DTK_AUTO without OS_AUTO",
			edit: func(t *testing.T, f *fixture) {
				writeFile(t, filepath.Join(f.manifests, "dockerfile.yaml"), configMapYAML("kmm-kmod-dockerfile", "dockerfile", "ARG DTK_AUTO\nFROM ${DTK_AUTO}\nRUN make\n"))
			},
			want: func(*fixture) string {
				return md + "the Dockerfile uses DTK_AUTO without OS_AUTO; the payload's driver toolkit only matches the payload's OS (the KMM day-0 proposal)"
			},
		},
		{
			name: "DTK_AUTO with no ClusterVersion",
			edit: func(t *testing.T, f *fixture) {},
			want: func(*fixture) string {
				return md + "finding DTK_AUTO (no --dtk-image): ClusterVersion version not found"
			},
		},
		{
			name: "ClusterVersion without status.desired.image",
			edit: func(t *testing.T, f *fixture) {
				writeFile(t, filepath.Join(f.manifests, "clusterversion.yaml"), strings.Replace(clusterVersionYAML(""), "image: \n", "", 1))
			},
			want: func(*fixture) string {
				return md + "finding DTK_AUTO (no --dtk-image): reading payload: ClusterVersion version: status.desired.image is empty"
			},
		},
		{
			name: "release image without driver-toolkit",
			edit: func(t *testing.T, f *fixture) {
				writeFile(t, filepath.Join(f.manifests, "clusterversion.yaml"), clusterVersionYAML(noDTKRelease))
			},
			want: func(*fixture) string {
				return md + "finding DTK_AUTO (no --dtk-image): release image " + noDTKRelease + `: release-manifests/image-references has no tag "driver-toolkit"`
			},
		},
		{
			name: "release image that is not a release",
			edit: func(t *testing.T, f *fixture) {
				writeFile(t, filepath.Join(f.manifests, "clusterversion.yaml"), clusterVersionYAML(osImage))
			},
			want: func(*fixture) string {
				return md + `finding DTK_AUTO (no --dtk-image): reading release image "` + osImage + `": no release-manifests/image-references (not a release image?)`
			},
		},
		{
			name: "Dockerfile build failure",
			edit: func(t *testing.T, f *fixture) {
				writeFile(t, filepath.Join(f.manifests, "dockerfile.yaml"), configMapYAML("kmm-kmod-dockerfile", "dockerfile", failing))
			},
			want: func(f *fixture) string {
				return md + `Dockerfile of ConfigMap "kmm-kmod-dockerfile": building ` + f.reg.Ref("kmods/rhcos:414-unsigned") + " with buildah: exit status"
			},
			tail: "kiln-step-output-before-failure",
		},
		{
			name: "cosign key not mounted for kmod-sign",
			sign: true,
			edit: func(t *testing.T, f *fixture) { os.Remove(filepath.Join(f.cosign, "cosign.key")) },
			want: func(f *fixture) string {
				return md + "reading the cosign key (--key): stat " + filepath.Join(f.cosign, "cosign.key") + ": no such file or directory"
			},
		},
		{
			name: "missing cert Secret file",
			sign: true,
			edit: func(t *testing.T, f *fixture) { f.certFile = filepath.Join(t.TempDir(), "cert") },
			want: func(f *fixture) string {
				return md + `reading spec.osMapping.sign.certSecret "kmm-kmod-signing-cert": open ` + f.certFile + ": no such file or directory"
			},
		},
		{
			name: "missing key Secret file",
			sign: true,
			edit: func(t *testing.T, f *fixture) { f.keyFile = filepath.Join(t.TempDir(), "key") },
			want: func(f *fixture) string {
				return md + `reading spec.osMapping.sign.keySecret "kmm-kmod-signing-key": open ` + f.keyFile + ": no such file or directory"
			},
		},
		{
			name: "bad cert",
			sign: true,
			edit: func(t *testing.T, f *fixture) {
				f.certFile = filepath.Join(t.TempDir(), "cert")
				writeFile(t, f.certFile, "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n")
			},
			want: func(*fixture) string {
				return md + `Secrets "kmm-kmod-signing-cert"/"kmm-kmod-signing-key": parsing signing certificate: x509: malformed certificate`
			},
		},
		{
			name: "cert of another key",
			sign: true,
			edit: func(t *testing.T, f *fixture) { f.certFile = other.CertPEM },
			want: func(*fixture) string {
				return md + `Secrets "kmm-kmod-signing-cert"/"kmm-kmod-signing-key": creating module signer: the key does not match the certificate of "someone else"`
			},
		},
		{
			name: "glob matching nothing",
			sign: true,
			edit: func(t *testing.T, f *fixture) {
				f.md.Spec.OSMapping.Sign.FilesToSign = []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/nvidia*.ko"}
			},
			want: func(*fixture) string {
				return md + `spec.osMapping.sign.filesToSign[0] "/opt/lib/modules/${KERNEL_FULL_VERSION}/nvidia*.ko": matches no file in the image (as "/opt/lib/modules/` + kmodtest.Kernel + `/nvidia*.ko")`
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, e, osImage, "", seedDockerfile())
			if c.sign {
				f.md.Spec.OSMapping.Build = nil
				f.md.Spec.OSMapping.Sign.UnsignedImage = unsigned
			}
			c.edit(t, f)
			var log bytes.Buffer
			if c.sign {
				err = f.sign(t, &log)
			} else {
				err = f.build(t, &log)
			}
			want := c.want(f)
			switch {
			case err == nil:
				t.Fatalf("no error; want %q", want)
			case c.tail == "" && err.Error() != want:
				t.Errorf("error:\n got %q\nwant %q", err, want)
			case c.tail != "":
				t.Logf("error: %v", err)
				if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), c.tail) {
					t.Errorf("error:\n got %q\nwant it to start with %q and carry the log line %q", err, want, c.tail)
				}
			}
			for _, ref := range []string{f.md.Spec.OSMapping.ContainerImage, e.Registry.Ref("kmods/rhcos:414-unsigned")} {
				r, _ := name.ParseReference(ref, name.Insecure)
				_, herr := remote.Head(r)
				var terr *transport.Error
				if !errors.As(herr, &terr) || terr.StatusCode != 404 {
					t.Errorf("%s after a failed run: %v, want 404 (nothing pushed)", ref, herr)
				}
			}
			if entries, _ := os.ReadDir(f.results); len(entries) != 0 {
				t.Errorf("results written after a failure: %v", entries)
			}
		})
	}
}
