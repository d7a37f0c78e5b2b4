package trigger

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kiln-dev/kiln/pkg/rollout"
)

// Staging: for each pool whose upgrade-ahead run for a release finished
// ready, the trigger creates a PinnedImageSet naming the run's node image
// by digest and lists it in the pool's spec.pinnedImageSets, so MCO's
// pinned image controller has the pool's nodes pull and pin it before the
// upgrade (https://github.com/openshift/api/blob/master/machineconfiguration/v1/types_pinnedimageset.go).
// The trigger owns only the sets it labelled (its cache sees no other) and
// the pool entries that name them; a user's sets and entries are never
// touched. A set goes (entry first, then the object) when its release is
// no longer a target and the pool is not in the middle of moving to it,
// or once the pool has rolled out to it.
const (
	// Results of the node-image Pipeline naming its node image.
	resultImageURL    = "IMAGE_URL"
	resultImageDigest = "IMAGE_DIGEST"
	// maxPinnedImage is the PinnedImageSet CRD's limit on an image name.
	maxPinnedImage = 447

	ReasonPinned   = "UpgradeImagePinned"
	ReasonUnpinned = "UpgradeImageUnpinned"
	ReasonStaging  = "UpgradeStagingFailed"
)

// pinWant is one node image a pool should have pinned: the release it is
// for and the image by digest.
type pinWant struct {
	release, image string
}

// pinName names pool's set for release and image: kiln-<pool>-<release>-
// <hash of the image>, so a new image for the same release is a new set
// (created before the old one is removed) and the trigger never updates
// one. A release that does not fit a name is hashed too.
func pinName(pool, release, image string) string {
	h := digest([]byte(image))[:10]
	n := "kiln-" + pool + "-" + strings.ToLower(release) + "-" + h
	if len(validation.IsDNS1123Subdomain(n)) == 0 {
		return n
	}
	h = digest([]byte(release + "\x00" + image))[:20]
	if room := validation.DNS1123SubdomainMaxLength - len("kiln--") - len(h); len(pool) > room {
		pool = strings.TrimRight(pool[:room], "-.")
	}
	return "kiln-" + pool + "-" + h
}

// nodeImageOf is a finished run's node image by digest, from its
// IMAGE_URL and IMAGE_DIGEST results, checked as a digest reference that
// fits a PinnedImageSet.
func nodeImageOf(pr *pipelinev1.PipelineRun) (string, error) {
	var url, dig string
	for _, r := range pr.Status.Results {
		switch r.Name {
		case resultImageURL:
			url = r.Value.StringVal
		case resultImageDigest:
			dig = r.Value.StringVal
		}
	}
	ref := url + "@" + dig
	if url == "" || dig == "" {
		return "", fmt.Errorf("PipelineRun %s: results %s and %s do not name its node image", pr.Name, resultImageURL, resultImageDigest)
	}
	if len(ref) > maxPinnedImage {
		return "", fmt.Errorf("PipelineRun %s: node image %.64q… is longer than a PinnedImageSet allows (%d)", pr.Name, ref, maxPinnedImage)
	}
	if _, err := name.NewDigest(ref); err != nil {
		return "", fmt.Errorf("PipelineRun %s: node image %q: %w", pr.Name, ref, err)
	}
	return ref, nil
}

// pinWants are the node images of pool's ready upgrade-ahead runs among
// wants. A ready run whose results name no usable image is logged and
// skipped: readiness already said it is ready, and pinning is an extra.
func pinWants(ctx context.Context, runs []*pipelinev1.PipelineRun, wants []aheadWant) []pinWant {
	var out []pinWant
	for _, w := range wants {
		r := runOf(runs, w.sum)
		if r == nil || !outcomeOf(r).ready {
			continue
		}
		img, err := nodeImageOf(r)
		if err != nil {
			log.FromContext(ctx).Info("ready upgrade-ahead run not staged", "error", err.Error())
			continue
		}
		out = append(out, pinWant{release: w.target.Version, image: img})
	}
	return out
}

// pinPlan is what syncPins does, in order: create the sets, set the
// pool's entries, delete the sets no entry names any more.
type pinPlan struct {
	create []*mcfgv1.PinnedImageSet
	delete []*mcfgv1.PinnedImageSet
	// refs is the pool's new spec.pinnedImageSets; patch is whether it
	// differs from the pool's.
	refs  []mcfgv1.PinnedImageSetRef
	patch bool
}

// planPins compares pool's wanted images with the sets kiln has for it
// (have: only kiln's, by label). keep says whether a set no longer wanted
// stays (the pool is moving to its release). The pool's entries that do
// not name a set of kiln's keep their place; kiln's follow, sorted.
func planPins(pool *mcfgv1.MachineConfigPool, poolName string, want []pinWant, have []mcfgv1.PinnedImageSet, keep func(*mcfgv1.PinnedImageSet) bool) pinPlan {
	var p pinPlan
	ours := map[string]bool{}
	stay := map[string]bool{}
	for i := range have {
		ours[have[i].Name] = true
	}
	for _, w := range want {
		n := pinName(poolName, w.release, w.image)
		stay[n] = true
		if !ours[n] {
			p.create = append(p.create, newPinSet(n, poolName, w))
			ours[n] = true
		}
	}
	for i := range have {
		s := &have[i]
		if stay[s.Name] || s.DeletionTimestamp != nil {
			continue
		}
		if keep(s) {
			stay[s.Name] = true
			continue
		}
		p.delete = append(p.delete, s)
	}
	if pool == nil { // a gone pool pins nothing
		p.create = nil
		return p
	}
	for _, r := range pool.Spec.PinnedImageSets {
		if !ours[r.Name] {
			p.refs = append(p.refs, r)
		}
	}
	names := make([]string, 0, len(stay))
	for n := range stay {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p.refs = append(p.refs, mcfgv1.PinnedImageSetRef{Name: n})
	}
	p.patch = !slices.Equal(p.refs, pool.Spec.PinnedImageSets)
	return p
}

func newPinSet(n, pool string, w pinWant) *mcfgv1.PinnedImageSet {
	return &mcfgv1.PinnedImageSet{
		ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{
			LabelManagedBy: ManagedBy, LabelPool: pool, LabelTargetRelease: w.release,
		}},
		Spec: mcfgv1.PinnedImageSetSpec{PinnedImages: []mcfgv1.PinnedImageRef{{Name: mcfgv1.ImageDigestFormat(w.image)}}},
	}
}

// syncPins stages pool's ready upgrade-ahead images (nil pool: the pool is
// gone, its sets go too). A cluster without the PinnedImageSet kind gets
// no staging, and nothing else changes.
func (c *Controller) syncPins(ctx context.Context, pool *mcfgv1.MachineConfigPool, name string, cv *configv1.ClusterVersion, runs []*pipelinev1.PipelineRun, wants []aheadWant) error {
	var list mcfgv1.PinnedImageSetList
	if err := c.Client.List(ctx, &list, client.MatchingLabels{LabelManagedBy: ManagedBy, LabelPool: name}); err != nil {
		if meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("listing the PinnedImageSets of pool %q: %w", name, err)
	}
	keep := func(s *mcfgv1.PinnedImageSet) bool { return c.movingTo(ctx, pool, cv, s) }
	p := planPins(pool, name, pinWants(ctx, runs, wants), list.Items, keep)
	for _, s := range p.create {
		if err := c.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PinnedImageSet %s for pool %q: %w", s.Name, name, err)
		}
		if pool != nil {
			c.Recorder.Eventf(pool, corev1.EventTypeNormal, ReasonPinned, "PinnedImageSet %s: the pool's nodes pull and pin %s, its node image for release %s",
				s.Name, s.Spec.PinnedImages[0].Name, s.Labels[LabelTargetRelease])
		}
	}
	if pool != nil && p.patch {
		base := pool.DeepCopy()
		next := pool.DeepCopy()
		next.Spec.PinnedImageSets = p.refs
		// Optimistic lock: a list is replaced whole by a merge patch, and a
		// user's entry added meanwhile must not be lost.
		if err := c.Client.Patch(ctx, next, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("setting spec.pinnedImageSets of pool %q: %w", name, err)
		}
	}
	for _, s := range p.delete {
		if err := c.Client.Delete(ctx, s, client.Preconditions{UID: &s.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting PinnedImageSet %s of pool %q: %w", s.Name, name, err)
		}
		if pool != nil {
			c.Recorder.Eventf(pool, corev1.EventTypeNormal, ReasonUnpinned, "PinnedImageSet %s removed: release %s is no longer a target, or the pool runs it",
				s.Name, s.Labels[LabelTargetRelease])
		}
	}
	return nil
}

// movingTo: the cluster is moving to s's release (the CVO's desired
// version) and the pool has not yet rolled out s's image: the set stays
// until its nodes run it. The pool has rolled out when kiln's MachineConfig
// names the image and every machine is updated to the pool's configuration.
func (c *Controller) movingTo(ctx context.Context, pool *mcfgv1.MachineConfigPool, cv *configv1.ClusterVersion, s *mcfgv1.PinnedImageSet) bool {
	if pool == nil || cv == nil || cv.Status.Desired.Version != s.Labels[LabelTargetRelease] || len(s.Spec.PinnedImages) == 0 {
		return false
	}
	var mc mcfgv1.MachineConfig
	if err := c.Client.Get(ctx, client.ObjectKey{Name: rollout.MachineConfigName(pool.Name)}, &mc); err != nil {
		return true // not rolled out yet (or unreadable now: keep, the next reconcile decides)
	}
	st := pool.Status
	done := mc.Spec.OSImageURL == string(s.Spec.PinnedImages[0].Name) &&
		st.Configuration.Name == pool.Spec.Configuration.Name && st.UpdatedMachineCount == st.MachineCount
	return !done
}
