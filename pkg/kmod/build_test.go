package kmod_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

const buildSecretValue = "kiln-build-token-3f9a1c"

// seedDockerfile has the shape of the KMM day-0 proposal's: compile in the driver
// toolkit, copy the .ko into the OS image under /opt/lib/modules and run
// depmod (busybox's, in the test OS image). The RUN with the build secret
// proves it is readable during the build.
func seedDockerfile() string {
	src := base64.StdEncoding.EncodeToString([]byte(env.HelloModuleSource))
	return `ARG DTK_AUTO
ARG OS_AUTO

FROM ${DTK_AUTO} as builder
ARG KERNEL_FULL_VERSION
ARG MOD_NAME
WORKDIR /usr/src/kiln-kmod
RUN --mount=type=secret,id=build-secret_token test "$(cat /run/secrets/build-secret_token)" = ` + buildSecretValue + `
RUN echo ` + src + ` | base64 -d > ${MOD_NAME}.c && echo "obj-m := ${MOD_NAME}.o" > Makefile
RUN make -s -C /usr/src/linux-headers-${KERNEL_FULL_VERSION} M=$PWD modules

FROM ${OS_AUTO}
ARG KERNEL_FULL_VERSION
ARG MOD_NAME
COPY --from=builder /usr/src/kiln-kmod/${MOD_NAME}.ko /opt/lib/modules/${KERNEL_FULL_VERSION}/
RUN depmod -b /opt ${KERNEL_FULL_VERSION}
`
}

// fixture is one kmod run's folders and flags.
type fixture struct {
	reg                        *env.Registry
	work, results, manifests   string
	secrets, certFile, keyFile string
	osImage, dtkImage          string
	md                         *kmmv1beta1.ModuleDay0
	kubeconfig                 string // set: objects come from the cluster
	buildahEnv                 []string
	// buildahBin, when set, is the buildah binary (a missing one proves
	// a run built nothing).
	buildahBin string
	// targetRelease is --target-release: set, the run is upgrade-ahead.
	targetRelease string
	// cosign is kiln's signing identity: cosign.key, cosign.password and
	// cosign.pub, as the signing-key and public-key workspaces mount them.
	cosign string
}

func newFixture(t *testing.T, e *env.Env, osImage, dtkImage, dockerfile string) *fixture {
	t.Helper()
	f := &fixture{reg: e.Registry, work: t.TempDir(), results: t.TempDir(), manifests: t.TempDir(), secrets: t.TempDir(),
		osImage: osImage, dtkImage: dtkImage}
	if e.Buildah != nil { // sign-only tests start no buildah
		f.buildahEnv = e.Buildah.Env
	}
	f.md = &kmmv1beta1.ModuleDay0{
		TypeMeta:   metav1.TypeMeta{APIVersion: kmmv1beta1.GroupVersion.String(), Kind: "ModuleDay0"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-kmm", Name: "kiln-hello"},
		Spec: kmmv1beta1.ModuleDay0Spec{
			MachineConfigPoolSelector: map[string]string{"node-role.kubernetes.io/worker": ""},
			OSMapping: kmmv1beta1.OSMapping{
				ContainerImage: e.Registry.Ref("kmods/rhcos:414"),
				Build: &kmmv1beta1.Build{
					Secrets:             []corev1.LocalObjectReference{{Name: "build-secret"}},
					DockerfileConfigMap: corev1.LocalObjectReference{Name: "kmm-kmod-dockerfile"},
				},
				Sign: &kmmv1beta1.Sign{
					CertSecret:  corev1.LocalObjectReference{Name: "kmm-kmod-signing-cert"},
					KeySecret:   corev1.LocalObjectReference{Name: "kmm-kmod-signing-key"},
					FilesToSign: []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/*.ko"},
				},
			},
		},
	}
	writeFile(t, filepath.Join(f.manifests, "dockerfile.yaml"), configMapYAML("kmm-kmod-dockerfile", "dockerfile", dockerfile))
	writeFile(t, filepath.Join(f.secrets, "build-secret", "token"), buildSecretValue)
	kp := kmodtest.NewKeyPair(t, "kiln day-0 signer")
	f.certFile, f.keyFile = kp.CertPEM, kp.KeyPEM
	f.cosign = cosignKeys(t)
	return f
}

// cosignKeyPair is generated once per test binary: its scrypt-encrypted
// private key costs about a second to make on a busy machine.
var cosignKeyPair = sync.OnceValues(func() (*cosign.KeysBytes, error) {
	return cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte("kiln-test-pw"), nil })
})

// cosignKeys writes kiln's test cosign key pair and its password in a
// fresh folder, as the signing-key and public-key workspaces mount them.
func cosignKeys(t *testing.T) string {
	t.Helper()
	kb, err := cosignKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "cosign.key"), string(kb.PrivateBytes))
	writeFile(t, filepath.Join(dir, "cosign.pub"), string(kb.PublicBytes))
	writeFile(t, filepath.Join(dir, "cosign.password"), "kiln-test-pw\n")
	return dir
}

func (f *fixture) identity() step.IdentityOptions {
	return step.IdentityOptions{PublicKey: filepath.Join(f.cosign, "cosign.pub")}
}

func (f *fixture) attest() sign.AttestOptions {
	return sign.AttestOptions{
		SigningOptions: sign.SigningOptions{KeyPath: filepath.Join(f.cosign, "cosign.key"), PasswordEnv: "KILN_TEST_UNSET_PASSWORD"},
		PasswordFile:   filepath.Join(f.cosign, "cosign.password"), RunID: "kmod-test",
	}
}

func configMapYAML(name, key, value string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: openshift-kmm\ndata:\n  %s: |\n", name, key)
	for _, l := range strings.Split(strings.TrimRight(value, "\n"), "\n") {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// clusterVersionYAML is ClusterVersion "version" desiring release (by digest).
func clusterVersionYAML(release string) string {
	return "apiVersion: config.openshift.io/v1\nkind: ClusterVersion\nmetadata:\n  name: version\nspec:\n  clusterID: 5ea4a7a4-0d3b-4a4b-9c1e-2f0c8a8c7d11\n" +
		"status:\n  desired:\n    version: 4.20.0\n    image: " + release + "\n"
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) writeModuleDay0(t *testing.T) {
	t.Helper()
	b, err := json.Marshal(f.md)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, work.Workspace{Root: f.work}.ModuleDay0Path(), string(b))
}

func (f *fixture) stepOptions() step.Options {
	return step.Options{Work: f.work, ResultsDir: f.results, Pool: "worker"}
}

func (f *fixture) build(t *testing.T, out io.Writer) error {
	f.writeModuleDay0(t)
	o := &kmod.BuildOptions{
		Options:         f.stepOptions(),
		RegistryOptions: registry.RegistryOptions{Insecure: []string{f.reg.Host}},
		KubeOptions:     kube.KubeOptions{Source: "dir:" + f.manifests},
		OSImage:         f.osImage, DTKImage: f.dtkImage, SecretsDir: f.secrets,
		Buildah:  buildah.Buildah{Bin: f.buildahBin, Env: f.buildahEnv},
		Identity: f.identity(), TargetRelease: f.targetRelease,
	}
	if f.kubeconfig != "" {
		o.KubeOptions = kube.KubeOptions{Source: "cluster", Kubeconfig: f.kubeconfig}
	}
	if err := o.Run(t.Context(), step.Streams{Out: out, Err: out}); err != nil {
		return err
	}
	// The Task's second step: the only one that holds the cosign key.
	a := &kmod.AttestOptions{Options: o.Options, RegistryOptions: o.RegistryOptions, KubeOptions: o.KubeOptions, Attest: f.attest(),
		TargetRelease: f.targetRelease}
	return a.Run(t.Context(), step.Streams{Out: out, Err: out})
}

func (f *fixture) sign(t *testing.T, out io.Writer) error {
	f.writeModuleDay0(t)
	o := &kmod.SignOptions{
		Options:         f.stepOptions(),
		RegistryOptions: registry.RegistryOptions{Insecure: []string{f.reg.Host}},
		KubeOptions:     kube.KubeOptions{Source: "dir:" + f.manifests},
		CertFile:        f.certFile, KeyFile: f.keyFile, Hash: "sha256",
		Identity: f.identity(), Attest: f.attest(), TargetRelease: f.targetRelease,
	}
	if f.kubeconfig != "" {
		o.KubeOptions = kube.KubeOptions{Source: "cluster", Kubeconfig: f.kubeconfig}
	}
	return o.Run(t.Context(), step.Streams{Out: out, Err: out})
}

func (f *fixture) result(t *testing.T, n string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.results, n))
	if err != nil {
		t.Fatalf("result %s: %v", n, err)
	}
	return string(b)
}

// image is the kmod image the results name: Chains' type hint,
// KMOD_IMAGE_URL (the repository) @ KMOD_IMAGE_DIGEST.
func (f *fixture) image(t *testing.T) string {
	t.Helper()
	return f.result(t, "KMOD_IMAGE_URL") + "@" + f.result(t, "KMOD_IMAGE_DIGEST")
}

// TestKmodBuildSignCompose is the KMM day-0 proposal's story with real parts:
// buildah compiles a real module in the driver-toolkit stand-in against its
// kernel headers, copies it into the test OS image and pushes; kmod-sign
// signs it with kiln's Go signer and places it in
// /usr/lib/modules/<kver>/extra/ with depmod's files, where modinfo finds
// it by name for that kernel; image-build layers a rendered MachineConfig
// on the signed image.
func TestKmodBuildSignCompose(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	start := time.Now()
	dtk, kver := env.PushDTK(t, e.Registry.Ref("payload/driver-toolkit:test"))
	t.Logf("DTK stand-in pushed in %s", time.Since(start).Round(time.Millisecond))
	osImage := env.PushOSImage(t, e.Registry.Ref("payload/rhel-coreos:test"), kver)
	// OS_AUTO comes from the payload ConfigMap (no --os-image); DTK_AUTO
	// from the driver-toolkit tag of the release image the ClusterVersion
	// names (no --dtk-image).
	release := env.PushRelease(t, e.Registry.Ref("ocp/release:4.20.0"), "4.20.0", map[string]string{"driver-toolkit": dtk, "rhel-coreos": osImage})
	f := newFixture(t, e, "", "", seedDockerfile())
	writeFile(t, filepath.Join(f.manifests, "payload.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: machine-config-osimageurl\n  namespace: openshift-machine-config-operator\ndata:\n  baseOSContainerImage: "+osImage+"\n")
	writeFile(t, filepath.Join(f.manifests, "clusterversion.yaml"), clusterVersionYAML(release))

	var log bytes.Buffer
	start = time.Now()
	if err := f.build(t, &log); err != nil {
		t.Fatalf("kmod-build: %v\n%s", err, log.String())
	}
	t.Logf("kmod-build (buildah, real module compile) took %s", time.Since(start).Round(time.Millisecond))
	// The minutes of compiling show as one line per Dockerfile instruction.
	if steps := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d \[kmod-build\] (\[\d+/\d+\] )?STEP \d+/\d+: \S`).FindAllString(log.String(), -1); len(steps) < 3 {
		t.Errorf("kmod-build log has %d STEP lines, want one per Dockerfile instruction:\n%s", len(steps), log.String())
	}
	if want := "DTK_AUTO is the release's driver-toolkit " + dtk; !strings.Contains(log.String(), want) || !strings.Contains(log.String(), "DTK_AUTO "+dtk+")") {
		t.Errorf("kmod-build log lacks %q:\n%s", want, log.String())
	}
	unsigned := f.image(t)
	if want := e.Registry.Ref("kmods/rhcos"); f.result(t, "KMOD_IMAGE_URL") != want || !strings.HasPrefix(f.result(t, "KMOD_IMAGE_DIGEST"), "sha256:") {
		t.Fatalf("KMOD_IMAGE_URL %q, KMOD_IMAGE_DIGEST %q", unsigned, f.result(t, "KMOD_IMAGE_DIGEST"))
	}
	var rep work.KmodReport
	b, err := os.ReadFile(filepath.Join(work.Workspace{Root: f.work}.StageDir(work.StageKmodBuild), work.KmodBuildFile))
	if err != nil || json.Unmarshal(b, &rep) != nil || rep.Image != unsigned || rep.Kernel != kver {
		t.Fatalf("build report %s (%v), want image %s kernel %s", b, err, unsigned, kver)
	}
	// Decide's target: containerImage's tag with -unsigned, since sign follows.
	tagged := pull(t, e.Registry.Ref("kmods/rhcos:414-unsigned"))
	if d, _ := tagged.Digest(); d.String() != rep.Digest {
		t.Errorf("tag 414-unsigned is %s, report says %s", d, rep.Digest)
	}
	files, raw := kmodtest.FlattenImage(t, tagged)
	ko := "opt/lib/modules/" + kver + "/kiln-hello.ko"
	if _, ok := files[ko]; !ok {
		t.Fatalf("unsigned image lacks %s; has %d files", ko, len(files))
	}
	if _, ok := files["opt/lib/modules/"+kver+"/modules.dep"]; !ok {
		t.Errorf("depmod -b /opt did not write modules.dep")
	}
	if _, ok := files["usr/src/kiln-kmod/kiln-hello.c"]; ok {
		t.Errorf("the builder stage leaked into the final image")
	}
	if bytes.Contains(raw, []byte(buildSecretValue)) {
		t.Errorf("the build secret is in a layer of the pushed image")
	}

	log.Reset()
	if err := f.sign(t, &log); err != nil {
		t.Fatalf("kmod-sign: %v\n%s", err, log.String())
	}
	signedRef := f.image(t)
	signed := pull(t, signedRef)
	sfiles, _ := kmodtest.FlattenImage(t, signed)
	// kmod-sign moved the module to where the booted kernel loads it,
	// ran depmod for that kernel, and took /opt out.
	placed := "usr/lib/modules/" + kver + "/extra/kiln-hello.ko"
	kmodtest.WantBooted(t, kmodtest.ExtractRoot(t, signed), kver, map[string]string{"kiln-hello": "kiln day-0 signer"})
	p := filepath.Join(t.TempDir(), "kiln-hello.ko")
	writeFile(t, p, string(sfiles[placed]))
	sig := kmodtest.ModinfoSig(t, p)
	if sig["signer"] != "kiln day-0 signer" || sig["sig_hashalgo"] != "sha256" || sig["sig_id"] != "PKCS#7" {
		t.Errorf("modinfo of the module in %s: %v", signedRef, sig)
	}
	t.Logf("modinfo of the signed module from the final kmod image:\n%s", kmodtest.ModinfoText(t, p))

	// A second kmod-build proves the unsigned image it pushed (kiln's
	// attestation for the same inputs) and builds nothing: its results
	// name that image again.
	log.Reset()
	if err := f.build(t, &log); err != nil {
		t.Fatalf("second kmod-build: %v\n%s", err, log.String())
	}
	if got := f.image(t); got != unsigned || !strings.Contains(log.String(), "attested by cosign key") || strings.Contains(log.String(), "building ") {
		t.Errorf("second kmod-build: KMOD_IMAGE_URL %s, want the unsigned %s reused; log:\n%s", got, unsigned, log.String())
	}

	// And a second kmod-sign signs nothing: no layer is stacked on the
	// signed image.
	log.Reset()
	if err := f.sign(t, &log); err != nil {
		t.Fatalf("second kmod-sign: %v\n%s", err, log.String())
	}
	if got := f.image(t); got != signedRef || !strings.Contains(log.String(), "nothing to sign") {
		t.Errorf("second kmod-sign: KMOD_IMAGE_URL %s, want the signed %s unchanged; log:\n%s", got, signedRef, log.String())
	}

	// Composition: the signed kmod image is image-build's base.
	mc := renderedWithFile(t, "/etc/kiln-kmod.conf", "options kiln_hello debug=1\n")
	res, err := imagebuild.Build(t.Context(), registry.Remote{Insecure: []string{e.Registry.Host}}, imagebuild.BuildInput{
		Base: signedRef, Repository: e.Registry.Ref("os/worker"), Pool: "worker", Rendered: mc,
		KmodDigests: []string{f.result(t, "KMOD_IMAGE_DIGEST")},
	})
	if err != nil {
		t.Fatalf("image-build on the kmod image: %v", err)
	}
	final, _ := kmodtest.FlattenImage(t, pull(t, res.Ref))
	if got := string(final["etc/kiln-kmod.conf"]); got != "options kiln_hello debug=1\n" {
		t.Errorf("final image /etc/kiln-kmod.conf = %q", got)
	}
	if !bytes.Equal(final[placed], sfiles[placed]) || final[placed] == nil {
		t.Errorf("final image's %s is not the signed module", placed)
	}
}

func pull(t *testing.T, ref string) v1.Image {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	return img
}

func renderedWithFile(t *testing.T, path, content string) *mcfgv1.MachineConfig {
	t.Helper()
	ign := fmt.Sprintf(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":%q,"mode":420,"contents":{"source":"data:,%s"}}]}}`,
		path, strings.ReplaceAll(strings.ReplaceAll(content, " ", "%20"), "\n", "%0A"))
	mc := &mcfgv1.MachineConfig{Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(ign)}, KernelType: "default"}}
	mc.APIVersion, mc.Kind, mc.Name = mcfgv1.GroupVersion.String(), "MachineConfig", "rendered-worker-kmodtest"
	mc.Annotations = map[string]string{"machineconfiguration.openshift.io/generated-by-controller-version": "kiln"}
	return mc
}
