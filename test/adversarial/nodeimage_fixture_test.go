package adversarial

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/osimage"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/signing"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
)

// nodeImageSite is a real registry with a base image, kiln's cosign key
// pair on disk as the Task workspaces mount it, and the node-image steps
// (image-build, image-sign, verify) run through their real options.
type nodeImageSite struct {
	host, base, repo string
	keyDir, pubKey   string
	id               trust.Identity
	r                registry.Remote
}

func newNodeImageSite(t *testing.T) *nodeImageSite {
	t.Helper()
	reg := env.StartRegistry(t, env.RegistryOptions{})
	s := &nodeImageSite{host: reg.Host, base: reg.Host + "/base/os:1", repo: reg.Host + "/kiln/os",
		keyDir: t.TempDir(), r: registry.Remote{Insecure: []string{reg.Host}}}
	img, err := random.Image(2048, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.push(t, s.base, env.WithKernel(t, img))
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte("kiln-pw"), nil })
	if err != nil {
		t.Fatal(err)
	}
	for f, b := range map[string][]byte{"cosign.key": kb.PrivateBytes, "cosign.password": []byte("kiln-pw"), "cosign.pub": kb.PublicBytes} {
		if err := os.WriteFile(filepath.Join(s.keyDir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.pubKey = filepath.Join(s.keyDir, "cosign.pub")
	s.id = trust.Identity{PublicKey: kb.PublicBytes}
	return s
}

// run is one pipeline run's workspace for a pool, fresh as a new
// PipelineRun's (no local state carries over).
type run struct {
	site          *nodeImageSite
	pool          string
	work, results string
	out           bytes.Buffer
}

func (s *nodeImageSite) newRun(t *testing.T, pool, motd string) *run {
	t.Helper()
	r := &run{site: s, pool: pool, work: t.TempDir(), results: t.TempDir()}
	src := "data:," + motd
	raw, _ := json.Marshal(igntypes.Config{Ignition: igntypes.Ignition{Version: "3.5.0"},
		Storage: igntypes.Storage{Files: []igntypes.File{{Node: igntypes.Node{Path: "/etc/motd"},
			FileEmbedded1: igntypes.FileEmbedded1{Contents: igntypes.Resource{Source: &src}}}}}})
	mc := &mcfgv1.MachineConfig{Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}}}
	mc.Kind, mc.Name = "MachineConfig", "rendered-"+pool+"-1"
	b, _ := json.Marshal(mc)
	if err := os.MkdirAll(filepath.Join(r.work, "render"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.work, "render", "rendered.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *run) common() (step.Options, registry.RegistryOptions) {
	return step.Options{Work: r.work, ResultsDir: r.results, Pool: r.pool}, registry.RegistryOptions{Insecure: []string{r.site.host}}
}

// build runs image-build with kiln's public key and returns its results.
func (r *run) build(t *testing.T) map[string]string {
	t.Helper()
	common, reg := r.common()
	o := &osimage.BuildOptions{Options: common, RegistryOptions: reg, IdentityOptions: step.IdentityOptions{PublicKey: r.site.pubKey},
		Base: r.site.base, Repository: r.site.repo, Source: imagebuild.DefaultSource}
	if err := o.Run(context.Background(), step.Streams{Out: &r.out, Err: &r.out}); err != nil {
		t.Fatalf("image-build: %v\n%s", err, r.out.String())
	}
	got := map[string]string{}
	for _, n := range []string{"IMAGE_URL", "IMAGE_DIGEST", "REUSED", "REUSE_REJECTED"} {
		b, err := os.ReadFile(filepath.Join(r.results, n))
		if err != nil {
			t.Fatal(err)
		}
		got[n] = string(b)
	}
	return got
}

// sign runs image-sign on image with kiln's key.
func (r *run) sign(image string) error {
	common, reg := r.common()
	o := &signing.SignOptions{Options: common, RegistryOptions: reg, Image: image, AttestOptions: sign.AttestOptions{RunID: "run-" + r.pool,
		SigningOptions: sign.SigningOptions{KeyPath: filepath.Join(r.site.keyDir, "cosign.key"), PasswordEnv: "KILN_ADVERSARIAL_UNSET"},
		PasswordFile:   filepath.Join(r.site.keyDir, "cosign.password")}}
	return o.Run(context.Background(), step.Streams{Out: &r.out, Err: &r.out})
}

// verify runs the verify step (the node's policy) on image.
func (r *run) verify(image string) error {
	common, reg := r.common()
	o := &signing.VerifyOptions{Options: common, RegistryOptions: reg, Image: image,
		IdentityOptions: step.IdentityOptions{PublicKey: r.site.pubKey}, NodeKeyPath: sign.DefaultNodeKeyPath}
	return o.Run(context.Background(), step.Streams{Out: &r.out, Err: &r.out})
}

// image is IMAGE_URL@IMAGE_DIGEST, what the Pipeline passes on.
func image(res map[string]string) string { return res["IMAGE_URL"] + "@" + res["IMAGE_DIGEST"] }

func (s *nodeImageSite) ref(t *testing.T, ref string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (s *nodeImageSite) push(t *testing.T, ref string, img v1.Image) v1.Hash {
	t.Helper()
	if err := remote.Write(s.ref(t, ref), img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// tagDigest is what tag points at now.
func (s *nodeImageSite) tagDigest(t *testing.T, tag string) string {
	t.Helper()
	d, err := remote.Head(s.ref(t, s.repo+":"+tag))
	if err != nil {
		t.Fatal(err)
	}
	return d.Digest.String()
}

// launder is the attacker's image: kiln's image at ref with one more file,
// kiln's labels (in the config) and manifest annotations copied on.
// plantAtFingerprintTag is the attacker's move shared by the node-image
// attacks: a laundered copy of r's built image pushed to r's fingerprint
// tag. It returns the tag and the attacker's digest.
func (s *nodeImageSite) plantAtFingerprintTag(t *testing.T, r *run, built map[string]string) (tag, attacker string) {
	t.Helper()
	tag = "kiln-" + fingerprintOf(t, r)
	return tag, s.push(t, s.repo+":"+tag, s.launder(t, image(built))).String()
}

func (s *nodeImageSite) launder(t *testing.T, ref string) v1.Image {
	t.Helper()
	kiln, err := remote.Image(s.ref(t, ref))
	if err != nil {
		t.Fatal(err)
	}
	m, err := kiln.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	extra, err := random.Layer(512, "application/vnd.docker.image.rootfs.diff.tar.gzip")
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(kiln, extra)
	if err != nil {
		t.Fatal(err)
	}
	return mutate.Annotations(img, m.Annotations).(v1.Image)
}

// assertNotKilnSigned fails when kiln's key vouches for digest in any way:
// a signature, an attestation, or the node policy.
func (s *nodeImageSite) assertNotKilnSigned(t *testing.T, r *run, digest string) {
	t.Helper()
	d, err := name.NewDigest(s.repo+"@"+digest, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if sts, err := sign.Statements(context.Background(), s.r, d, s.id); err == nil {
		t.Errorf("%s carries kiln's signature and %d attestations", digest, len(sts))
	}
	if err := r.verify(d.String()); err == nil {
		t.Errorf("verify passed for %s", digest)
	} else if !strings.Contains(err.Error(), "refused") && !strings.Contains(err.Error(), "signature") {
		t.Errorf("verify of %s failed without naming the signature: %v", digest, err)
	}
}

func osimageReport(r *run) (*workspace.BuildReport, error) {
	return workspace.Workspace{Root: r.work}.ReadBuildReport()
}

func remoteImage(ref name.Reference) (v1.Image, error) { return remote.Image(ref) }

// tagDigestOf is what ref (a tag) points at now.
func (s *nodeImageSite) tagDigestOf(t *testing.T, ref string) string {
	t.Helper()
	d, err := remote.Head(s.ref(t, ref))
	if err != nil {
		t.Fatal(err)
	}
	return d.Digest.String()
}
