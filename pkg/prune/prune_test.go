package prune

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/pkg/retention"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// TestPruneDeletesUnneededKilnImagesAndGarbageCollectionFreesThePlannedBytes
// runs a prune against docker-registry: of kiln's repository it deletes
// exactly the kiln-signed images nothing names, with their tags and
// artifacts, and the artifacts an interrupted prune left; after
// `registry garbage-collect` the blobs freed on disk are the bytes the
// plan printed, and every kept image (the pool's, its kmod image, another
// signer's, one with a tag kiln did not write, the base) still pulls and
// verifies. A second prune finds nothing to do.
func TestPruneDeletesUnneededKilnImagesAndGarbageCollectionFreesThePlannedBytes(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, env.StartRegistry(t, env.RegistryOptions{}))
	other := imagetest.NewCosignKey(t)
	otherV, err := sign.LoadVerifier(other.PubPath)
	if err != nil {
		t.Fatal(err)
	}
	kmod := f.node(t, f.nodeInputs(t, "kmod"), nil)
	current := f.node(t, f.nodeInputs(t, "1", digest(kmod)), nil)
	old2 := f.node(t, f.nodeInputs(t, "2"), nil)
	old3 := f.node(t, f.nodeInputs(t, "3"), nil)
	interrupted := f.node(t, f.nodeInputs(t, "4"), nil)
	foreign := f.node(t, f.nodeInputs(t, "5"), &other)
	userTagged := f.node(t, f.nodeInputs(t, "6"), nil, "latest")

	// A prune stopped after deleting an image, before its artifacts.
	if err := f.r.Delete(ctx, mustDigest(t, f, interrupted)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.reg.GarbageCollect(); err != nil {
		t.Fatal(err)
	}

	pool := mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}
	pool.Status.Configuration.Name = "rendered-worker-1"
	rendered := mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-worker-1"}}
	rendered.Spec.OSImageURL = current
	cluster := func(context.Context) (retention.Cluster, error) {
		return retention.Cluster{Pools: []mcfgv1.MachineConfigPool{pool}, MachineConfigs: []mcfgv1.MachineConfig{rendered}}, nil
	}
	cfg := f.config(cluster)

	p, err := MakePlan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var deletes []string
	for _, d := range p.Deletes() {
		deletes = append(deletes, d.Repo+"@"+d.Digest)
	}
	if d := cmp.Diff(sorted(old2, old3), deletes); d != "" {
		t.Errorf("planned deletes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]Orphan{{Repo: f.repo, Subject: digest(interrupted), Tags: artifactTags(interrupted)}}, p.Orphans); d != "" {
		t.Errorf("orphans (-want +got):\n%s", d)
	}
	wantReasons := map[string]string{
		current:    "kept: pool worker: current rendered config rendered-worker-1",
		kmod:       "kept: kmod-image of kept " + digest(current)[:19],
		foreign:    "not signed and attested with kiln's key: ",
		userTagged: "tag latest was not written by kiln",
	}
	for _, d := range p.Decisions {
		want, ok := wantReasons[d.Repo+"@"+d.Digest]
		if ok && (d.Delete || !strings.HasPrefix(d.Reason, want)) {
			t.Errorf("%s: delete=%v reason %q, want kept with %q", d.Digest, d.Delete, d.Reason, want)
		}
	}
	if p.FreedBytes <= 0 {
		t.Fatalf("planned freed bytes %d, want some", p.FreedBytes)
	}

	before, err := f.reg.BlobBytes()
	if err != nil {
		t.Fatal(err)
	}
	out, err := Apply(ctx, cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(append(sorted(old2, old3), interrupted), out.Deleted); d != "" {
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

	for _, ref := range []string{current, kmod, userTagged} {
		f.pullsAndVerifies(t, ref, f.v)
	}
	f.pullsAndVerifies(t, foreign, otherV)
	f.pullsAndVerifies(t, f.baseRef, nil)
	for _, ref := range []string{old2, old3} {
		f.gone(t, ref)
	}
	var wantTags []string
	for _, ref := range []string{kmod, current, foreign, userTagged} {
		wantTags = append(wantTags, artifactTags(ref)...)
		wantTags = append(wantTags, tagOf(t, p, ref))
	}
	wantTags = append(wantTags, "latest")
	slices.Sort(wantTags)
	if d := cmp.Diff(wantTags, f.tags(t)); d != "" {
		t.Errorf("tags after the prune (-want +got):\n%s", d)
	}

	again, err := MakePlan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Deletes()) != 0 || len(again.Orphans) != 0 || again.FreedBytes != 0 {
		t.Errorf("second prune plans deletes %v, orphans %v, %d bytes; want nothing", again.Deletes(), again.Orphans, again.FreedBytes)
	}
}

func sorted(refs ...string) []string {
	s := slices.Clone(refs)
	slices.Sort(s)
	return s
}

// tagOf is the kiln- tag the plan saw on ref.
func tagOf(t *testing.T, p *Plan, ref string) string {
	t.Helper()
	for _, d := range p.Decisions {
		if d.Repo+"@"+d.Digest == ref {
			for _, tag := range d.Tags {
				if strings.HasPrefix(tag, retention.TagPrefix) {
					return tag
				}
			}
		}
	}
	t.Fatalf("no kiln- tag for %s in the plan", ref)
	return ""
}
