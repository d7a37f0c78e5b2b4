package examples

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kiln-dev/kiln/cmd/cli"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/modsign"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
)

// buildAndSignSampleKmods runs render (infra), kmod-build, kmod-attest
// and kmod-sign of the sample into work, as the pipeline does, with the
// sample's module image pointed at e's registry, and returns the results
// folder.
func buildAndSignSampleKmods(t *testing.T, e *env.Env, refs []string, dtk, work string) string {
	t.Helper()
	ctx := t.Context()
	results := filepath.Join(work, "results")
	var out, errb bytes.Buffer
	args := []string{workspace.StageRender, "--pool=infra", "--source=dir:" + clusterDir, "--work=" + work, "--results-dir=" + results}
	if code := cli.Execute(ctx, cli.NewSteps(), args, &out, &errb); code != exitcode.ExitOK {
		t.Fatalf("render: exit %d\n%s%s", code, out.String(), errb.String())
	}
	ws := workspace.Workspace{Root: work}
	mdPath := ws.ModuleDay0Path()
	b, err := os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mdPath, bytes.ReplaceAll(b, []byte(Registry+"/"), []byte(e.Registry.Host+"/")), 0o644); err != nil {
		t.Fatal(err)
	}

	opts := step.Options{Work: work, ResultsDir: results, Pool: "infra"}
	reg := registry.RegistryOptions{Insecure: []string{e.Registry.Host}}
	var log bytes.Buffer
	// kmod-build and kmod-sign attest what they push with kiln's cosign
	// key and reuse only what that key attested.
	keys := env.CosignKeys(t)
	identity := step.IdentityOptions{PublicKey: filepath.Join(keys, "cosign.pub")}
	attest := sign.AttestOptions{SigningOptions: sign.SigningOptions{KeyPath: filepath.Join(keys, "cosign.key")},
		PasswordFile: filepath.Join(keys, "cosign.password"), RunID: "examples-kmod"}
	build := &kmod.BuildOptions{Options: opts, RegistryOptions: reg, KubeOptions: kube.KubeOptions{Source: "dir:" + clusterDir},
		OSImage: refs[0], DTKImage: dtk, SecretsDir: t.TempDir(), Buildah: buildah.Buildah{Env: e.Buildah.Env},
		Identity: identity}
	start := time.Now()
	if err := build.Run(ctx, step.Streams{Out: &log, Err: &log}); err != nil {
		t.Fatalf("kmod-build: %v\n%s", err, log.String())
	}
	// The Task's second step: the only one that holds the cosign key.
	attestBuild := &kmod.AttestOptions{Options: opts, RegistryOptions: reg, KubeOptions: build.KubeOptions, Attest: attest}
	if err := attestBuild.Run(ctx, step.Streams{Out: &log, Err: &log}); err != nil {
		t.Fatalf("kmod-attest: %v\n%s", err, log.String())
	}
	t.Logf("kmod-build of the sample took %s", time.Since(start).Round(time.Millisecond))
	certFile, keyFile := env.ModuleSigningPair(t, "kiln examples signer")
	sign := &kmod.SignOptions{Options: opts, RegistryOptions: reg, KubeOptions: kube.KubeOptions{Source: "dir:" + clusterDir},
		CertFile: certFile, KeyFile: keyFile, Hash: "sha256",
		Identity: identity, Attest: attest}
	if err := sign.Run(ctx, step.Streams{Out: &log, Err: &log}); err != nil {
		t.Fatalf("kmod-sign: %v\n%s", err, log.String())
	}
	return results
}

// TestKmodBuildAndSignFromSample runs the sample's day-0 module through
// the real kmod stages: render (infra) puts the ModuleDay0 and infra's
// rendered config (kernelType realtime) into the workspace, kmod-build runs
// the sample's Dockerfile with buildah for the realtime kernel (a real
// module compiled in the DTK stand-in, copied into the locally made base),
// kmod-sign signs it and places it in /usr/lib/modules/<rt kver>/extra/
// with modules.dep, and modinfo reads the signer from the final image.
// The only change to the sample: containerImage points at the test's
// registry instead of make run's 127.0.0.1:5555.
func TestKmodBuildAndSignFromSample(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	ctx := t.Context()
	images, err := Images()
	if err != nil {
		t.Fatal(err)
	}
	refs, err := Push(ctx, e.Registry.Host, images)
	if err != nil {
		t.Fatal(err)
	}
	dtk, _ := env.PushDTK(t, e.Registry.Ref("openshift/driver-toolkit:"+ReleaseVersion))

	work := t.TempDir()
	results := buildAndSignSampleKmods(t, e, refs, dtk, work)
	url, _ := os.ReadFile(filepath.Join(results, "KMOD_IMAGE_URL"))
	digest, _ := os.ReadFile(filepath.Join(results, "KMOD_IMAGE_DIGEST"))
	if string(url) != e.Registry.Host+"/kiln/infra-kmods" || !strings.HasPrefix(string(digest), "sha256:") {
		t.Fatalf("KMOD_IMAGE_URL %q, KMOD_IMAGE_DIGEST %q", url, digest)
	}
	ref, err := name.ParseReference(string(url)+"@"+string(digest), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	// infra boots the realtime kernel (60-infra-realtime-kernel): the
	// module is built for it and placed in its folder, /opt is gone.
	placed, err := modsign.PlacedModules(img, RTKernelVersion)
	if want := []string{"/usr/lib/modules/" + RTKernelVersion + "/extra/kiln-hello.ko"}; err != nil || !slices.Equal(placed, want) {
		t.Fatalf("PlacedModules(%s) = %v, %v; want %v", RTKernelVersion, placed, err, want)
	}
	if _, err := payload.ReadImageFile(img, "opt/lib/modules/"+RTKernelVersion+"/kiln-hello.ko"); err == nil {
		t.Errorf("the signed image still has the module under /opt, which a node's import drops")
	}
	ko, err := payload.ReadImageFile(img, strings.TrimPrefix(placed[0], "/"))
	if err != nil {
		t.Fatalf("signed image: %v", err)
	}
	dep, err := payload.ReadImageFile(img, "usr/lib/modules/"+RTKernelVersion+"/modules.dep")
	if err != nil || !strings.Contains(string(dep), "extra/kiln-hello.ko:") {
		t.Errorf("modules.dep of the realtime kernel = %q, %v; want it to list extra/kiln-hello.ko", dep, err)
	}
	if osr, err := payload.ReadImageFile(img, "usr/lib/os-release"); err != nil || !strings.Contains(string(osr), OSVersion) {
		t.Errorf("the kmod image is not built on the sample's base: %v", err)
	}
	p := filepath.Join(t.TempDir(), "kiln-hello.ko")
	if err := os.WriteFile(p, ko, 0o644); err != nil {
		t.Fatal(err)
	}
	modinfo, err := env.LookTool("modinfo")
	if err != nil {
		t.Fatal(err)
	}
	info, err := exec.Command(modinfo, p).CombinedOutput()
	if err != nil {
		t.Fatalf("modinfo: %v\n%s", err, info)
	}
	for _, want := range []string{"description:    kiln example day-0 module", "signer:         kiln examples signer", "sig_hashalgo:   sha256"} {
		if !strings.Contains(string(info), want) {
			t.Errorf("modinfo lacks %q:\n%s", want, info)
		}
	}
}
