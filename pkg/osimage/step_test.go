package osimage

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	workspace "github.com/kiln-dev/kiln/pkg/work"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/nodeimport"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

func TestImageBuildStep(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	imagetest.PushBase(t, reg.Host, "base/os:1", 2)
	work, results := t.TempDir(), t.TempDir()
	mc := imagetest.RenderedMC(t, "rendered-worker-abc", imagetest.SampleConfig(t, "hi"))
	writeRendered(t, work, mc)

	key := imagetest.NewCosignKey(t)
	run := func() map[string]string {
		o := &BuildOptions{Options: step.Options{Work: work, ResultsDir: results, Pool: "worker"},
			RegistryOptions: registry.RegistryOptions{Insecure: []string{reg.Host}},
			IdentityOptions: step.IdentityOptions{PublicKey: key.PubPath},
			Base:            reg.Host + "/base/os:1", Repository: reg.Host + "/kiln/os", Source: imagebuild.DefaultSource}
		var out bytes.Buffer
		if err := o.Run(context.Background(), step.Streams{Out: &out, Err: &out}); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		got := map[string]string{}
		for _, n := range []string{"IMAGE_URL", "IMAGE_DIGEST", "REUSED", "REUSE_REJECTED", "BASE_IMAGE_ARTIFACT_INPUTS", "NODE_CHECK"} {
			v, err := os.ReadFile(filepath.Join(results, n))
			if err != nil {
				t.Fatal(err)
			}
			got[n] = string(v)
		}
		return got
	}
	first := run()
	// Chains' type hints: the repository in IMAGE_URL, the base as an
	// {uri, digest} object for the provenance's materials.
	if first["REUSED"] != "false" || first["IMAGE_URL"] != reg.Host+"/kiln/os" || !strings.HasPrefix(first["IMAGE_DIGEST"], "sha256:") {
		t.Fatalf("results %v", first)
	}
	baseDesc, err := remote.Head(imagetest.MustRef(t, reg.Host+"/base/os:1"))
	if err != nil {
		t.Fatal(err)
	}
	// sampleConfig's /usr/local/bin/tool lands in /var (mco-var), and the
	// random base's top-level files are dropped by the import.
	if got := first["NODE_CHECK"]; !strings.HasPrefix(got, "pass ("+nodeimport.RulesVersion+"), ") || strings.HasPrefix(got, "pass ("+nodeimport.RulesVersion+"), 0 ") {
		t.Errorf("NODE_CHECK %q, want a pass with warnings", got)
	}
	if got := first["NODE_CHECK"]; !strings.Contains(got, "/var/usrlocal/bin/tool (under /var") {
		t.Errorf("NODE_CHECK %q does not name the file an upgraded node does not get from the image", got)
	}
	var inputs map[string]string
	if err := json.Unmarshal([]byte(first["BASE_IMAGE_ARTIFACT_INPUTS"]), &inputs); err != nil ||
		inputs["uri"] != "oci://"+reg.Host+"/base/os" || inputs["digest"] != baseDesc.Digest.String() {
		t.Errorf("BASE_IMAGE_ARTIFACT_INPUTS %s (%v), want uri oci://%s/base/os and digest %s", first["BASE_IMAGE_ARTIFACT_INPUTS"], err, reg.Host, baseDesc.Digest)
	}
	// Unsigned, the build at the tag is not reused: rebuilt (the same
	// digest, the build is reproducible) and the rejection names it.
	unsigned := run()
	if unsigned["REUSED"] != "false" || unsigned["IMAGE_DIGEST"] != first["IMAGE_DIGEST"] ||
		!strings.Contains(unsigned["REUSE_REJECTED"], "holds "+first["IMAGE_DIGEST"]+" with no kiln attestation for these inputs: ") {
		t.Fatalf("unsigned rerun results %v", unsigned)
	}
	rec, err := trust.ReadRecord(filepath.Join(work, "image", "build.json"))
	if err != nil {
		t.Fatal(err)
	}
	key.Sign(t, registry.Remote{Insecure: []string{reg.Host}}, rec.Ref, rec.Inputs)
	second := run()
	if second["REUSED"] != "true" || second["IMAGE_DIGEST"] != first["IMAGE_DIGEST"] || second["REUSE_REJECTED"] != "" ||
		!strings.HasPrefix(second["NODE_CHECK"], "pass ("+nodeimport.RulesVersion+", attested); ") {
		t.Fatalf("second run results %v", second)
	}
	rep, err := os.ReadFile(filepath.Join(work, "image", "build.json"))
	if err != nil || !strings.Contains(string(rep), "/etc/motd") || !strings.Contains(string(rep), `"nodeLint"`) {
		t.Fatalf("report: %v %s", err, rep)
	}

	os.Remove(filepath.Join(work, "render", "rendered.json"))
	o := &BuildOptions{Options: step.Options{Work: work, ResultsDir: results, Pool: "worker"}, Base: "quay.io/org/base:1", Repository: "quay.io/org/os"}
	if err := o.Run(context.Background(), step.Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}); err == nil || !strings.Contains(err.Error(), "rendered.json") {
		t.Fatalf("missing rendered.json: %v", err)
	}
}

func writeRendered(t *testing.T, work string, mc *mcfgv1.MachineConfig) {
	t.Helper()
	b, err := json.Marshal(mc)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(work, "render"), 0o755)
	if err := os.WriteFile(filepath.Join(work, "render", "rendered.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestImageBuildStepPreflightFailsClosed: a custom base that is not built
// from the payload base stops image-build before anything is pushed.
func TestImageBuildStepPreflightFailsClosed(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	imagetest.PushBase(t, reg.Host, "ocp/rhcos:1", 2)
	imagetest.PushBase(t, reg.Host, "custom/other:1", 2)
	work, results := t.TempDir(), t.TempDir()
	writeRendered(t, work, imagetest.RenderedMC(t, "rendered-worker-abc", imagetest.SampleConfig(t, "hi")))
	o := &BuildOptions{Options: step.Options{Work: work, ResultsDir: results, Pool: "worker"},
		RegistryOptions: registry.RegistryOptions{Insecure: []string{reg.Host}},
		Base:            reg.Host + "/custom/other:1", PayloadBase: reg.Host + "/ocp/rhcos:1",
		Repository: reg.Host + "/kiln/os", Source: imagebuild.DefaultSource}
	err := o.Run(context.Background(), step.Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "preflight of custom base "+reg.Host+"/custom/other:1") {
		t.Fatalf("error %v: want the preflight failure naming the custom base", err)
	}
	if _, err := remote.List(imagetest.MustRef(t, reg.Host+"/kiln/os:x").Context()); err == nil {
		t.Error("the target repository exists: something was pushed after a failed preflight")
	}
	if entries, _ := os.ReadDir(results); len(entries) > 0 {
		t.Errorf("results written after a failed preflight: %v", entries)
	}
}

// TestImageBuildStepKmodBase: when the kmod stages left an image in the
// workspace, it is the base (the payload base becomes the preflight
// reference) and its digest is recorded among the kmod digests.
func TestImageBuildStepKmodBase(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	payloadBase := imagetest.PushBase(t, reg.Host, "base/os:1", 2)
	kmodLayer, err := random.Layer(4096, types.OCILayer)
	if err != nil {
		t.Fatal(err)
	}
	kmodImg, err := mutate.AppendLayers(payloadBase, kmodLayer)
	if err != nil {
		t.Fatal(err)
	}
	kref, _ := name.ParseReference(reg.Host+"/kmods/os:1", name.Insecure)
	if err := remote.Write(kref, kmodImg); err != nil {
		t.Fatal(err)
	}
	kd, _ := kmodImg.Digest()
	work, results := t.TempDir(), t.TempDir()
	writeRendered(t, work, imagetest.RenderedMC(t, "rendered-worker-kmod", imagetest.SampleConfig(t, "hi")))
	os.MkdirAll(filepath.Join(work, "kmod"), 0o755)
	kmodRef := kref.Context().Digest(kd.String()).String()
	if err := os.WriteFile(filepath.Join(work, "kmod", "sign.json"), []byte(`{"image":"`+kmodRef+`","digest":"`+kd.String()+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	o := &BuildOptions{Options: step.Options{Work: work, ResultsDir: results, Pool: "worker"},
		RegistryOptions: registry.RegistryOptions{Insecure: []string{reg.Host}},
		Base:            reg.Host + "/base/os:1", Repository: reg.Host + "/kiln/os", Source: imagebuild.DefaultSource}
	var out bytes.Buffer
	if err := o.Run(context.Background(), step.Streams{Out: &out, Err: &out}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	rep, err := workspace.Workspace{Root: work}.ReadBuildReport()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Base != kmodRef || len(rep.KmodDigests) != 1 || rep.KmodDigests[0] != kd.String() {
		t.Errorf("report base %s kmod digests %v, want %s and [%s]", rep.Base, rep.KmodDigests, kmodRef, kd)
	}
	if !strings.Contains(out.String(), "preflight: "+kmodRef+" against payload base "+reg.Host+"/base/os:1") {
		t.Errorf("no preflight of the kmod image against the payload base:\n%s", out.String())
	}
	img, err := remote.Image(imagetest.MustRef(t, rep.Ref))
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := img.Layers()
	kl, _ := kmodImg.Layers()
	for i := range kl {
		a, _ := kl[i].Digest()
		b, _ := layers[i].Digest()
		if a != b {
			t.Fatalf("layer %d of the image is not the kmod image's", i)
		}
	}
}
