package prune

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/retention"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
)

// kmodBuild is one run of kmod-build and kmod-sign for a ModuleDay0 whose
// containerImage is repo:v1: the unsigned image pushed at v1-unsigned and
// attested as a kmod build, then the signed image pushed at v1 and
// attested as a kmod signing of it, both with kiln's key. It returns the
// unsigned and the signed image by digest.
func (f *fixture) kmodBuild(t *testing.T, repo string, kernel string) (unsigned, signed string) {
	t.Helper()
	dockerfile := "FROM " + f.baseRef + "\n"
	sum := sha256.Sum256([]byte(dockerfile))
	target := repo + ":v1"
	bin, err := trust.KmodBuild{Module: "kmm/nvidia", Target: target + "-unsigned", DockerfileHash: "sha256:" + hex.EncodeToString(sum[:]),
		Dockerfile: dockerfile, OSImage: f.baseRef, KernelVersion: kernel}.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	unsigned = f.pushLayered(t, target+"-unsigned")
	f.key.Sign(t, f.r, unsigned, bin)
	sin, err := trust.KmodSign{Module: "kmm/nvidia", Target: target, Unsigned: unsigned, CertHash: "sha256:" + strings.Repeat("c", 64),
		Hash: "sha256", FilesToSign: []string{"/lib/modules/" + kernel + "/nvidia.ko"}, KernelVersion: kernel}.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	signed = f.pushLayered(t, target)
	f.key.Sign(t, f.r, signed, sin)
	return unsigned, signed
}

// pushLayered pushes the base with one random layer of its own at ref (a
// tag) and returns it by digest.
func (f *fixture) pushLayered(t *testing.T, ref string) string {
	t.Helper()
	layer, err := random.Layer(16<<10, "application/vnd.oci.image.layer.v1.tar+gzip")
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(f.base, layer)
	if err != nil {
		t.Fatal(err)
	}
	return f.push(t, ref, img)
}

// TestPruneDeletesKmodImagesTheirTagMovedAwayFrom: three kmod builds to
// one ModuleDay0's tags in docker-registry. The first is untagged and
// needed by nothing: the prune finds it (signed and unsigned) through its
// .sig/.att tags, deletes it with its artifacts, and after `registry
// garbage-collect` the bytes freed on disk are the ones planned. The
// second is untagged too but the pool's current node image was built
// from it: it stays, with its unsigned build, through the node image's
// attestation. The third, which the tags name, stays. The kept ones
// still pull and verify, and a second prune finds nothing to do.
func TestPruneDeletesKmodImagesTheirTagMovedAwayFrom(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, env.StartRegistry(t, env.RegistryOptions{}))
	kmodRepo := f.reg.Host + "/kmods/nvidia"
	u1, s1 := f.kmodBuild(t, kmodRepo, "5.14.0-1.el9.x86_64")
	u2, s2 := f.kmodBuild(t, kmodRepo, "5.14.0-2.el9.x86_64")
	current := f.node(t, f.nodeInputs(t, "1", digest(s2)), nil)
	u3, s3 := f.kmodBuild(t, kmodRepo, "5.14.0-3.el9.x86_64")

	pool := mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}
	pool.Status.Configuration.Name = "rendered-worker-1"
	rendered := mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-worker-1"}}
	rendered.Spec.OSImageURL = current
	md := kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Namespace: "kmm", Name: "nvidia"}}
	md.Spec.OSMapping.ContainerImage = kmodRepo + ":v1"
	md.Spec.OSMapping.Sign = &kmmv1beta1.Sign{FilesToSign: []string{"/lib/modules/*/nvidia.ko"}}
	cfg := f.config(func(context.Context) (retention.Cluster, error) {
		return retention.Cluster{Pools: []mcfgv1.MachineConfigPool{pool}, MachineConfigs: []mcfgv1.MachineConfig{rendered},
			ModuleDay0s: []kmmv1beta1.ModuleDay0{md}}, nil
	})

	p, err := MakePlan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{f.repo, kmodRepo}, p.Repositories); d != "" {
		t.Errorf("repositories scanned (-want +got):\n%s", d)
	}
	var deletes []string
	for _, d := range p.Deletes() {
		deletes = append(deletes, d.Repo+"@"+d.Digest)
	}
	if d := cmp.Diff(sorted(u1, s1), deletes); d != "" {
		t.Errorf("planned deletes (-want +got):\n%s", d)
	}
	wantReasons := map[string]string{
		s2: "kept: kmod-image of kept " + digest(current)[:19],
		u2: "kept: unsigned-image of kept " + digest(s2)[:19],
		s3: "kept: ModuleDay0 kmm/nvidia: spec.osMapping.containerImage",
		u3: "kept: ModuleDay0 kmm/nvidia: the unsigned image; unsigned-image of kept " + digest(s3)[:19],
	}
	for _, d := range p.Decisions {
		if want, ok := wantReasons[d.Repo+"@"+d.Digest]; ok && (d.Delete || d.Reason != want) {
			t.Errorf("%s: delete=%v reason %q, want kept with %q", d.Repo+"@"+d.Digest, d.Delete, d.Reason, want)
		}
	}
	if p.FreedBytes <= 0 {
		t.Fatalf("planned freed bytes %d, want some", p.FreedBytes)
	}

	// Blobs nothing referenced before the prune (an artifact manifest
	// signing replaced) are not the prune's to count.
	if _, err := f.reg.GarbageCollect(); err != nil {
		t.Fatal(err)
	}
	before, err := f.reg.BlobBytes()
	if err != nil {
		t.Fatal(err)
	}
	out, err := Apply(ctx, cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(sorted(u1, s1), out.Deleted); d != "" {
		t.Errorf("deleted (-want +got):\n%s", d)
	}
	if _, err := f.reg.GarbageCollect(); err != nil {
		t.Fatal(err)
	}
	after, err := f.reg.BlobBytes()
	if err != nil {
		t.Fatal(err)
	}
	if before-after != p.FreedBytes {
		t.Errorf("garbage collection freed %d bytes of blobs, the plan said %d", before-after, p.FreedBytes)
	}
	for _, ref := range []string{u2, s2, u3, s3, current} {
		f.pullsAndVerifies(t, ref, f.v)
	}
	f.gone(t, s1)
	f.gone(t, u1)
	repo, err := f.r.ParseRepo(kmodRepo)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := f.r.ListTags(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(tags)
	want := []string{"v1", "v1-unsigned"}
	for _, ref := range []string{u2, s2, u3, s3} {
		want = append(want, artifactTags(ref)...)
	}
	slices.Sort(want)
	if d := cmp.Diff(want, tags); d != "" {
		t.Errorf("kmod repository tags after the prune (-want +got):\n%s", d)
	}

	again, err := MakePlan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Deletes()) != 0 || len(again.Orphans) != 0 || again.FreedBytes != 0 {
		t.Errorf("second prune plans deletes %v, orphans %v, %d bytes; want nothing", again.Deletes(), again.Orphans, again.FreedBytes)
	}
}

// TestAKmodImageItsTagMovesBackToBeforeTheDeleteStays: the plan deletes
// the first of two kmod builds; before the first delete a run pushes
// that image to the ModuleDay0's tag again. The keep set read before
// each delete names it through the tag, and its unsigned build through
// its attestation: neither is deleted, both are said why, and both still
// pull and verify.
func TestAKmodImageItsTagMovesBackToBeforeTheDeleteStays(t *testing.T) {
	ctx := context.Background()
	f := newFixtureAt(t, inProcessRegistry(t, false))
	kmodRepo := strings.TrimSuffix(f.repo, "/kiln/os") + "/kmods/nvidia"
	u1, s1 := f.kmodBuild(t, kmodRepo, "5.14.0-1.el9.x86_64")
	f.kmodBuild(t, kmodRepo, "5.14.0-2.el9.x86_64")
	md := kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Namespace: "kmm", Name: "nvidia"}}
	md.Spec.OSMapping.ContainerImage = kmodRepo + ":v1"
	md.Spec.OSMapping.Sign = &kmmv1beta1.Sign{FilesToSign: []string{"/lib/modules/*/nvidia.ko"}}
	calls := 0
	cfg := f.config(func(context.Context) (retention.Cluster, error) {
		if calls++; calls == 2 { // the check before the first delete
			f.retag(t, s1, kmodRepo+":v1")
		}
		return retention.Cluster{ModuleDay0s: []kmmv1beta1.ModuleDay0{md}}, nil
	})
	p, err := MakePlan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Deletes()) != 2 {
		t.Fatalf("planned %d deletes, want %s and %s", len(p.Deletes()), u1, s1)
	}
	out, err := Apply(ctx, cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	want := &Outcome{Spared: map[string]string{
		s1: "ModuleDay0 kmm/nvidia: spec.osMapping.containerImage",
		u1: "unsigned-image of kept " + digest(s1)[:19],
	}}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("outcome (-want +got):\n%s", d)
	}
	f.pullsAndVerifies(t, s1, f.v)
	f.pullsAndVerifies(t, u1, f.v)
}

// retag points tag (repository:tag) at ref's manifest, as a push of the
// same image does.
func (f *fixture) retag(t *testing.T, ref, tag string) {
	t.Helper()
	ctx := context.Background()
	desc, err := f.r.GetNamed(ctx, mustDigest(t, f, ref))
	if err != nil {
		t.Fatal(err)
	}
	img, err := desc.Image()
	if err != nil {
		t.Fatal(err)
	}
	f.push(t, tag, img)
}
