package examples

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/pkg/kmodbuild"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/modsign"
	"github.com/kiln-dev/kiln/pkg/osimage"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
)

// sampleRun is one from-scratch run of the sample's three pools.
type sampleRun struct {
	host string
	// digests by image: worker, master, infra, kmod-build, kmod-sign.
	digests map[string]string
	// infraWork is infra's workspace (rendered config, kmod reports).
	infraWork, extensions string
	// works are every pool's workspace, by pool.
	works   map[string]string
	buildah *env.Buildah
}

// runSampleFromScratch serves an empty registry at addr (as make run's
// embedded registry: go-containerregistry's, blobs on disk), pushes the
// sample's images, and builds every pool as make run does, with its own
// empty buildah storage: worker and master on the fast path; infra's
// kmod-build, kmod-sign, then infra's buildah path on the kmod image.
// then runs while the registry is still up; it is stopped on return.
func runSampleFromScratch(t *testing.T, addr, keys, certFile, keyFile string, then func(sampleRun)) map[string]string {
	t.Helper()
	ctx := t.Context()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: ggcrregistry.New(ggcrregistry.WithBlobHandler(ggcrregistry.NewDiskBlobHandler(t.TempDir())),
		ggcrregistry.Logger(log.New(io.Discard, "", 0)))}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	host := addr
	bb := env.NewBuildah(t, env.BuildahOptions{InsecureRegistries: []string{host}})
	for _, kv := range bb.Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	images, err := Images()
	if err != nil {
		t.Fatal(err)
	}
	refs, err := Push(ctx, host, images)
	if err != nil {
		t.Fatal(err)
	}
	dtk, _ := env.PushDTK(t, host+"/openshift/driver-toolkit:"+ReleaseVersion)
	reg := registry.RegistryOptions{Insecure: []string{host}}
	run := sampleRun{host: host, digests: map[string]string{}, extensions: refs[1], buildah: bb, works: map[string]string{}}
	imageBuild := func(work, pool string) {
		results := filepath.Join(work, "out")
		o := &osimage.BuildOptions{Options: step.Options{Work: work, ResultsDir: results, Pool: pool}, RegistryOptions: reg,
			Base: refs[0], PayloadBase: refs[0], ExtensionsImage: refs[1],
			Repository: host + "/kiln/" + pool, Source: imagebuild.DefaultSource, BuildahBin: "buildah"}
		var log bytes.Buffer
		if err := o.Run(ctx, step.Streams{Out: &log, Err: &log}); err != nil {
			t.Fatalf("image-build %s: %v\n%s", pool, err, log.String())
		}
		d, err := os.ReadFile(filepath.Join(results, "IMAGE_DIGEST"))
		if err != nil {
			t.Fatal(err)
		}
		run.digests[pool] = string(d)
		run.works[pool] = work
	}
	for _, pool := range []string{"worker", "master"} {
		work := t.TempDir()
		renderInto(t, work, pool)
		imageBuild(work, pool)
	}

	work := t.TempDir()
	renderInto(t, work, "infra")
	ws := workspace.Workspace{Root: work}
	md, err := os.ReadFile(ws.ModuleDay0Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ws.ModuleDay0Path(), bytes.ReplaceAll(md, []byte(Registry+"/"), []byte(host+"/")), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := step.Options{Work: work, ResultsDir: filepath.Join(work, "kmod-results"), Pool: "infra"}
	identity := step.IdentityOptions{PublicKey: filepath.Join(keys, "cosign.pub")}
	attest := sign.AttestOptions{SigningOptions: sign.SigningOptions{KeyPath: filepath.Join(keys, "cosign.key")},
		PasswordFile: filepath.Join(keys, "cosign.password"), RunID: "examples-reproducible"}
	var log bytes.Buffer
	build := &kmod.BuildOptions{Options: opts, RegistryOptions: reg, KubeOptions: kube.KubeOptions{Source: "dir:" + clusterDir},
		OSImage: refs[0], DTKImage: dtk, SecretsDir: t.TempDir(), Buildah: buildah.Buildah{Env: bb.Env},
		Identity: identity}
	if err := build.Run(ctx, step.Streams{Out: &log, Err: &log}); err != nil {
		t.Fatalf("kmod-build: %v\n%s", err, log.String())
	}
	attestBuild := &kmod.AttestOptions{Options: opts, RegistryOptions: reg, KubeOptions: build.KubeOptions, Attest: attest}
	if err := attestBuild.Run(ctx, step.Streams{Out: &log, Err: &log}); err != nil {
		t.Fatalf("kmod-attest: %v\n%s", err, log.String())
	}
	sign := &kmod.SignOptions{Options: opts, RegistryOptions: reg, KubeOptions: kube.KubeOptions{Source: "dir:" + clusterDir},
		CertFile: certFile, KeyFile: keyFile, Hash: "sha256", Identity: identity, Attest: attest}
	if err := sign.Run(ctx, step.Streams{Out: &log, Err: &log}); err != nil {
		t.Fatalf("kmod-sign: %v\n%s", err, log.String())
	}
	for stage, file := range map[string]string{"kmod-build": workspace.KmodBuildFile, "kmod-sign": "sign.json"} {
		run.digests[stage] = readKmodReport(t, ws, file).Digest
	}
	imageBuild(work, "infra")
	run.infraWork = work
	if then != nil {
		then(run)
	}
	return run.digests
}

func readKmodReport(t *testing.T, ws workspace.Workspace, file string) workspace.KmodReport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws.StageDir(workspace.StageKmodBuild), file))
	if err != nil {
		t.Fatal(err)
	}
	var rep workspace.KmodReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestSamplePoolsBuildTwiceToTheSameDigests runs the sample from scratch
// twice, as two `make run`s on two machines would: separate empty
// registries (at the same address, which the images name), separate empty
// buildah storage, more than two seconds apart so that a wall-clock second
// leaking into any byte shows, the same module-signing key. Every image
// has the same digest both times: worker and master (fast path), the
// kmod-build and kmod-sign images, and infra (buildah path on the kmod
// image).
func TestSamplePoolsBuildTwiceToTheSameDigests(t *testing.T) {
	addr := freeAddr(t)
	keys := env.CosignKeys(t)
	certFile, keyFile := env.ModuleSigningPair(t, "kiln examples signer")
	first := runSampleFromScratch(t, addr, keys, certFile, keyFile, nil)
	time.Sleep(2100 * time.Millisecond)
	second := runSampleFromScratch(t, addr, keys, certFile, keyFile, func(run sampleRun) {
		checkSampleRebuilds(t, run)
	})
	for _, k := range []string{"worker", "master", "kmod-build", "kmod-sign", "infra"} {
		t.Logf("%-10s %s / %s", k, first[k], second[k])
		if first[k] == "" || first[k] != second[k] {
			t.Errorf("%s: first run %q, second run %q", k, first[k], second[k])
		}
	}
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// checkSampleRebuilds rebuilds infra's images from what the run recorded,
// in fresh storage and without pushing, and gets the pushed digests:
// kmod-build's image from its inputs (RebuildUnsigned), kmod-sign's from
// the rebuilt unsigned image and the signatures of the pushed one
// (Resign, no key), infra's node image on top (Rebuild, buildah path).
func checkSampleRebuilds(t *testing.T, run sampleRun) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	r := registry.Remote{Insecure: []string{run.host}}
	ws := workspace.Workspace{Root: run.infraWork}
	bb := buildah.Buildah{Env: run.buildah.Env}

	built := readKmodReport(t, ws, workspace.KmodBuildFile)
	unsigned, err := kmodbuild.RebuildUnsigned(ctx, r, bb, *built.Inputs, t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatalf("rebuilding kmod-build's image: %v", err)
	}
	if unsigned.Digest.String() != built.Digest {
		t.Errorf("kmod-build pushed %s, the rebuild gives %s", built.Digest, unsigned.Digest)
	}
	if d := built.Inputs.Diff(unsigned.Inputs); d != "" {
		t.Errorf("kmod-build rebuild inputs: %s", d)
	}
	signed := readKmodReport(t, ws, "sign.json")
	ref, err := r.ParseRef(signed.Image)
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := r.Image(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	resigned, err := modsign.Resign(unsigned.Image, pushed, *signed.Inputs)
	if err != nil {
		t.Fatalf("re-signing: %v", err)
	}
	if resigned.Digest.String() != signed.Digest {
		t.Errorf("kmod-sign pushed %s, re-signing gives %s", signed.Digest, resigned.Digest)
	}

	rep, err := ws.ReadBuildReport()
	if err != nil {
		t.Fatal(err)
	}
	mc, err := imagebuild.ReadRendered(ws.RenderedPath())
	if err != nil {
		t.Fatal(err)
	}
	in := imagebuild.BuildahInput{ExtensionsImage: run.extensions, BuildInput: imagebuild.BuildInput{
		Base: rep.Base, Repository: run.host + "/kiln/infra", Pool: "infra", Rendered: mc,
		KmodDigests: rep.KmodDigests, Source: imagebuild.DefaultSource}}
	node, err := imagebuild.Rebuild(ctx, r, bb, in, "buildah", t.TempDir())
	if err != nil {
		t.Fatalf("rebuilding infra's image: %v", err)
	}
	if node.Digest.String() != rep.Digest {
		t.Errorf("image-build pushed %s for infra, the rebuild gives %s", rep.Digest, node.Digest)
	}
	if d := rep.Inputs.Diff(node.Inputs); d != "" {
		t.Errorf("infra rebuild inputs: %s", d)
	}
}
