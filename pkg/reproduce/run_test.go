package reproduce_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	workspace "github.com/kiln-dev/kiln/pkg/work"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/osimage"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/reproduce"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
)

// site is a real registry with two base images and kiln's cosign key
// pair as the Task workspaces mount it.
type site struct {
	host, base, otherBase, repo string
	keys                        string
	r                           registry.Remote
}

func newSite(t *testing.T) *site {
	t.Helper()
	reg := env.StartRegistry(t, env.RegistryOptions{})
	s := &site{host: reg.Host, base: reg.Host + "/base/os:1", otherBase: reg.Host + "/base/os:2",
		repo: reg.Host + "/kiln/os", keys: env.CosignKeys(t), r: registry.Remote{Insecure: []string{reg.Host}}}
	for _, ref := range []string{s.base, s.otherBase} {
		img, err := random.Image(1024, 1)
		if err != nil {
			t.Fatal(err)
		}
		s.push(t, ref, env.WithKernel(t, img))
	}
	return s
}

func (s *site) push(t *testing.T, ref string, img v1.Image) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return r.Context().Digest(d.String()).String()
}

// rendered writes a rendered config whose /etc/motd is motd.
func rendered(t *testing.T, dir, motd string) string {
	t.Helper()
	src := "data:," + motd
	raw, _ := json.Marshal(igntypes.Config{Ignition: igntypes.Ignition{Version: "3.5.0"},
		Storage: igntypes.Storage{Files: []igntypes.File{{Node: igntypes.Node{Path: "/etc/motd"},
			FileEmbedded1: igntypes.FileEmbedded1{Contents: igntypes.Resource{Source: &src}}}}}})
	mc := &mcfgv1.MachineConfig{Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}}}
	mc.APIVersion, mc.Kind, mc.Name = mcfgv1.GroupVersion.String(), "MachineConfig", "rendered-worker-1"
	b, _ := json.Marshal(mc)
	path := filepath.Join(dir, "render", "rendered.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// build runs image-build (fast path) on base with a rendered config
// whose /etc/motd is motd, and returns the image and its recorded inputs.
func (s *site) build(t *testing.T, base, motd string) (string, trust.Inputs) {
	t.Helper()
	work := t.TempDir()
	rendered(t, work, motd)
	o := osimage.DefaultBuildOptions()
	o.Options = step.Options{Work: work, ResultsDir: t.TempDir(), Pool: "worker"}
	o.RegistryOptions = registry.RegistryOptions{Insecure: []string{s.host}}
	o.IdentityOptions = step.IdentityOptions{PublicKey: filepath.Join(s.keys, "cosign.pub")}
	o.Base, o.Repository, o.Source = base, s.repo, imagebuild.DefaultSource
	var out bytes.Buffer
	if err := o.Run(context.Background(), step.Streams{Out: &out, Err: &out}); err != nil {
		t.Fatalf("image-build: %v\n%s", err, out.String())
	}
	rec, err := trust.ReadRecord(workspace.Workspace{Root: work}.BuildReportPath())
	if err != nil {
		t.Fatal(err)
	}
	return rec.Ref, rec.Inputs
}

// sign signs and attests image as built from in with kiln's key: what
// image-sign does for an honest build, and what a compromised builder
// holding the key does for a tampered one.
func (s *site) sign(t *testing.T, image string, in trust.Inputs) {
	t.Helper()
	key, err := os.ReadFile(filepath.Join(s.keys, "cosign.key"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Sign(context.Background(), s.r, sign.SignInput{Image: image, Inputs: in, RunID: "run-1",
		Key: key, Password: []byte(env.CosignPassword)}); err != nil {
		t.Fatalf("signing %s: %v", image, err)
	}
}

type outcome struct {
	code     int
	out, err string
	results  map[string]string
	report   reproduce.Report
}

func (s *site) reproduce(t *testing.T, image string, set func(*reproduce.Options)) outcome {
	t.Helper()
	o := reproduce.DefaultOptions()
	o.Image = image
	o.PublicKey = filepath.Join(s.keys, "cosign.pub")
	o.RegistryOptions = registry.RegistryOptions{Insecure: []string{s.host}}
	o.ResultsDir = t.TempDir()
	o.ReportFile = filepath.Join(t.TempDir(), "diff.json")
	if set != nil {
		set(o)
	}
	var out, errb bytes.Buffer
	err := o.Run(context.Background(), step.Streams{Out: &out, Err: &errb})
	res := outcome{code: exitcode.CodeOf(err), out: out.String(), err: errb.String(), results: map[string]string{}}
	if err != nil {
		res.err += err.Error()
	}
	for _, n := range []string{"REPRODUCED", "DIFF"} {
		if b, err := os.ReadFile(filepath.Join(o.ResultsDir, n)); err == nil {
			res.results[n] = string(b)
		}
	}
	if b, err := os.ReadFile(o.ReportFile); err == nil {
		if err := json.Unmarshal(b, &res.report); err != nil {
			t.Fatalf("--report-file: %v", err)
		}
	}
	return res
}

// tamper is a compromised builder's image: img with /etc/motd replaced in
// kiln's layer (a layer appended that overwrites it), pushed by digest.
func (s *site) tamper(t *testing.T, ref string) string {
	t.Helper()
	r, _ := name.ParseReference(ref, name.Insecure)
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	layer := fileLayer(t, "etc/motd", "owned")
	bad, err := mutate.AppendLayers(img, layer)
	if err != nil {
		t.Fatal(err)
	}
	return s.push(t, s.repo+":tampered", bad)
}

// An image not signed by kiln's key is not rebuilt: exit 3, before any
// rebuild, REPRODUCED=false.
func TestReproduceRefusesAnUnattestedImage(t *testing.T) {
	s := newSite(t)
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref := s.push(t, s.repo+":unsigned", img)
	got := s.reproduce(t, ref, nil)
	if got.code != exitcode.ExitRefused || got.results["REPRODUCED"] != "false" || !strings.Contains(got.err, "no kiln signature") {
		t.Errorf("exit %d, results %v, stderr %s; want 3 and REPRODUCED=false", got.code, got.results, got.err)
	}
}

// A node image whose own currentconfig is not the config kiln attested
// (built from a changed rendered config, attested with the honest
// inputs) is not reproducible, naming the file; given the honest config,
// the rebuild and the comparison name the files that differ.
func TestReproduceChangedRenderedConfig(t *testing.T) {
	s := newSite(t)
	_, honestInputs := s.build(t, s.base, "hello")
	evil, _ := s.build(t, s.base, "owned")
	s.sign(t, evil, honestInputs)
	got := s.reproduce(t, evil, nil)
	if got.code != exitcode.ExitNotReproducible || !strings.Contains(got.out, imagebuild.CurrentConfigPath) ||
		got.results["REPRODUCED"] != "false" || len(got.report.Images) != 1 || got.report.Images[0].Identical {
		t.Fatalf("exit %d, results %v\n%s\n%s", got.code, got.results, got.out, got.err)
	}

	honest := rendered(t, t.TempDir(), "hello")
	got = s.reproduce(t, evil, func(o *reproduce.Options) { o.RenderedConfig = honest })
	assertDiffers(t, got, "/etc/motd", imagebuild.CurrentConfigPath)

	// A --rendered-config of another config is refused, naming both hashes.
	other := rendered(t, t.TempDir(), "other")
	got = s.reproduce(t, evil, func(o *reproduce.Options) { o.RenderedConfig = other })
	if got.code != exitcode.ExitInputRejected || !strings.Contains(got.err, "kiln attested") {
		t.Errorf("another config: exit %d %s", got.code, got.err)
	}
}

// An honest image reproduces: identical, REPRODUCED=true.
func TestReproduceHonestImage(t *testing.T) {
	s := newSite(t)
	ref, in := s.build(t, s.base, "hello")
	s.sign(t, ref, in)
	got := s.reproduce(t, ref, nil)
	if got.code != exitcode.ExitOK || got.out != "identical "+ref+"\n" || got.results["REPRODUCED"] != "true" || got.results["DIFF"] != "identical" {
		t.Fatalf("exit %d, results %v\nstdout %q\n%s", got.code, got.results, got.out, got.err)
	}
}

// A tampered layer, re-pushed and attested with the honest inputs by a
// compromised builder, is not reproducible and the file is named.
func TestReproduceTamperedLayer(t *testing.T) {
	s := newSite(t)
	ref, in := s.build(t, s.base, "hello")
	bad := s.tamper(t, ref)
	s.sign(t, bad, in)
	assertDiffers(t, s.reproduce(t, bad, nil), "/etc/motd")
}

// An image built on another base but attested as built on the pinned one
// is not reproducible: the base layers' files are named.
func TestReproduceChangedBase(t *testing.T) {
	s := newSite(t)
	_, in := s.build(t, s.base, "hello")
	other, _ := s.build(t, s.otherBase, "hello")
	s.sign(t, other, in)
	got := s.reproduce(t, other, nil)
	assertDiffers(t, got, "random_file")
}

// assertDiffers: exit 7, REPRODUCED=false, and the text and JSON reports
// name every path in paths.
func assertDiffers(t *testing.T, got outcome, paths ...string) {
	t.Helper()
	if got.code != exitcode.ExitNotReproducible || got.results["REPRODUCED"] != "false" {
		t.Fatalf("exit %d, results %v\n%s\n%s", got.code, got.results, got.out, got.err)
	}
	var files []string
	for _, img := range got.report.Images {
		if img.Diff == nil {
			continue
		}
		for _, l := range img.Diff.Layers {
			for _, f := range l.Files {
				files = append(files, f.Path)
			}
		}
	}
	for _, p := range paths {
		if !strings.Contains(got.out, p) || !strings.Contains(strings.Join(files, "\n"), p) {
			t.Errorf("the report does not name %s:\n%s\nJSON files: %v", p, got.out, files)
		}
	}
}

// fileLayer is a layer holding one regular file.
func fileLayer(t *testing.T, path, body string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: path, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// An image attested in another build format (an older kiln) is not
// rebuilt by this one: a failure (exit 1) naming the parameter, not a
// difference of the image.
func TestReproduceOtherBuildFormatFails(t *testing.T) {
	s := newSite(t)
	ref, in := s.build(t, s.base, "hello")
	old := in
	old.Parameters = maps.Clone(in.Parameters)
	old.Parameters["format"] = "kiln-image/0"
	s.sign(t, ref, old)
	got := s.reproduce(t, ref, nil)
	if got.code != exitcode.ExitFailure || !strings.Contains(got.err, "format") || got.results["REPRODUCED"] != "false" {
		t.Errorf("exit %d, results %v\n%s", got.code, got.results, got.err)
	}
}
