package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/examples"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/pkg/trigger"
	"github.com/kiln-dev/kiln/test/env"
)

// The releases the upgrade-ahead phase offers: readyRelease (the z-stream)
// is the sample release on a new OS image, brokenRelease (the y-stream)
// names that OS image as its driver toolkit too, which compiles nothing:
// infra's kernel module does not build for it.
const (
	readyRelease  = "4.20.4"
	brokenRelease = "4.21.0"
)

// offer is one release the phase pushes: its release image by digest and
// the OS image it names.
type offer struct {
	release configv1.Release
	osImage string
}

// testUpgradeAhead is issue 34's scenario on the running cluster: two
// releases offered in ClusterVersion status.availableUpdates make an
// upgrade-ahead run per pool and release, which roll nothing out; the
// ready release's images are pinned for every pool, the broken one is
// NotReady at kmod-build for infra (event, status line) and changes no
// running pool. With the broken offer withdrawn, spec.desiredUpdate set
// and the payload moved to the ready release, each pool's run reuses the
// ahead images (image-build, kmod-build and kmod-sign REUSED) and rolls
// them out.
func (c *cluster) testUpgradeAhead(ctx context.Context, t *testing.T) {
	prevT := c.t
	c.t = t
	defer func() { c.t = prevT }()

	ready, broken, ext := c.pushReleases(ctx)
	before := c.clusterWrites(ctx)
	known := c.runNames(ctx)
	c.noteChange(fmt.Sprintf("releases %s and %s offered", readyRelease, brokenRelease))
	c.setOffers(ctx, nil, ready.release, broken.release)

	ahead := map[string]*pipelinev1.PipelineRun{}
	for _, rel := range []string{readyRelease, brokenRelease} {
		for _, pool := range wavePools {
			r := c.waitRun(ctx, pool, func(r *pipelinev1.PipelineRun) bool {
				return !known[r.Name] && r.Labels[trigger.LabelTargetRelease] == rel
			}, 10*time.Minute)
			ahead[pool+"/"+rel] = c.waitFinished(ctx, r, 20*time.Minute)
		}
	}
	for key, r := range ahead {
		pool, rel, _ := strings.Cut(key, "/")
		c.assertAheadRun(ctx, r, pool, rel == brokenRelease && pool == "infra")
	}
	// Nothing an ahead run did reached a running pool: kiln's MachineConfigs,
	// the MachineSets and the nodes' images are as they were.
	if diff := c.clusterWrites(ctx); !mapsEqual(before, diff) {
		t.Errorf("upgrade-ahead runs changed the cluster: before %v, after %v", before, diff)
	}
	for _, pool := range wavePools {
		c.assertPinned(ctx, pool, readyRelease, runResults(ahead[pool+"/"+readyRelease])["IMAGE_DIGEST"])
		c.assertStatusLine(ctx, pool, readyRelease, trigger.StatusReady+": PipelineRun "+ahead[pool+"/"+readyRelease].Name)
		c.assertCVEvent(ctx, trigger.ReasonUpgradeReady, fmt.Sprintf("pool %s is ready for release %s", pool, readyRelease))
	}
	c.assertStatusLine(ctx, "infra", brokenRelease, trigger.StatusNotReady+": kmod-build: ")
	c.assertCVEvent(ctx, trigger.ReasonUpgradeNotReady, fmt.Sprintf("pool infra is not ready for release %s: PipelineRun %s failed at kmod-build", brokenRelease, ahead["infra/"+brokenRelease].Name))
	if n := c.pinnedSets(ctx, "infra", brokenRelease); len(n) > 0 {
		t.Errorf("pool infra pins %v for release %s, whose run failed", n, brokenRelease)
	}

	// The broken offer goes (its pins with it); the user picks the ready one.
	c.setOffers(ctx, &ready.release, ready.release)
	c.poll(ctx, 2*time.Minute, "the pins of release "+brokenRelease+" to go", func() bool {
		for _, pool := range wavePools {
			if len(c.pinnedSets(ctx, pool, brokenRelease)) > 0 {
				return false
			}
		}
		return true
	})

	// The cluster moves to the ready release: every pool's run reuses.
	known = c.runNames(ctx)
	c.noteChange(fmt.Sprintf("payload moved to release %s (upgrade-ahead images ready)", readyRelease))
	c.moveTo(ctx, ready, ext)
	upgrade := c.waitWaves(ctx, wavePools, known, trigger.TriggerPayload, 15*time.Minute)
	for _, pool := range wavePools {
		r := upgrade[pool]
		c.assertRun(ctx, r)
		tasks := c.taskRuns(ctx, r)
		reused := []string{"image-build"}
		if pool == "infra" {
			reused = append(reused, "kmod-build", "kmod-sign")
		}
		for _, task := range reused {
			if got := tasks[task].result("REUSED"); got != "true" {
				t.Errorf("run %s: %s REUSED %q (REUSE_REJECTED %q), want true: the upgrade-ahead run built it", r.Name, task, got, tasks[task].result("REUSE_REJECTED"))
			}
		}
		// Already signed and attested by the upgrade-ahead run: image-sign
		// is skipped, and verify is left to rollout.
		for _, task := range []string{"image-sign", "verify"} {
			if _, ran := tasks[task]; ran {
				t.Errorf("run %s ran %s for the reused image; want it skipped", r.Name, task)
			}
		}
		want := runResults(ahead[pool+"/"+readyRelease])["IMAGE_DIGEST"]
		if got := runResults(r)["IMAGE_DIGEST"]; got != want {
			t.Errorf("run %s rolled out %s, want the upgrade-ahead image %s", r.Name, got, want)
		}
		t.Logf("pool %s: change to rollout start %s with upgrade-ahead images", pool, c.toRollout(ctx, r))
	}
	// Rolled out: the pins have done their work and go.
	c.poll(ctx, 3*time.Minute, "the pins of release "+readyRelease+" to go once rolled out", func() bool {
		for _, pool := range wavePools {
			if len(c.pinnedSets(ctx, pool, readyRelease)) > 0 {
				return false
			}
		}
		return true
	})
}

// pushReleases pushes the two releases' images: a new OS image (the sample
// base with one more label), and a release image each naming it, the
// cluster's extensions image and a driver toolkit by digest. It returns
// them and the extensions image.
func (c *cluster) pushReleases(ctx context.Context) (ready, broken offer, ext string) {
	osImage, err := examples.PushNextBase(ctx, c.reg.Host, "io.kiln.e2e.payload", readyRelease)
	if err != nil {
		c.t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.c.Get(ctx, client.ObjectKey{Namespace: payload.Namespace, Name: payload.OSImageURLMap}, cm); err != nil {
		c.t.Fatal(err)
	}
	ext = cm.Data["baseOSExtensionsContainerImage"]
	release := func(version, dtk string) offer {
		img := env.ReleaseImage(c.t, version, map[string]string{
			payload.TagRHELCoreOS: osImage, payload.TagRHELCoreOSExtensions: ext, payload.TagDriverToolkit: dtk})
		refs, err := examples.Push(ctx, c.reg.Host, []examples.Named{{Repository: examples.ReleaseRepository, Image: img}})
		if err != nil {
			c.t.Fatal(err)
		}
		return offer{release: configv1.Release{Version: version, Image: refs[0]}, osImage: osImage}
	}
	return release(readyRelease, c.dtk), release(brokenRelease, osImage), ext
}

// setOffers sets ClusterVersion status.availableUpdates to offers, as the
// CVO does from its update service, and spec.desiredUpdate to desired
// (nil: none), as `oc adm upgrade --to` does.
func (c *cluster) setOffers(ctx context.Context, desired *configv1.Release, offers ...configv1.Release) {
	c.t.Helper()
	c.updateCV(ctx, func(cv *configv1.ClusterVersion) {
		cv.Status.AvailableUpdates = offers
	})
	if desired == nil {
		return
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cv := &configv1.ClusterVersion{}
		if err := c.c.Get(ctx, client.ObjectKey{Name: payload.ClusterVersionName}, cv); err != nil {
			return err
		}
		cv.Spec.DesiredUpdate = &configv1.Update{Version: desired.Version, Image: desired.Image}
		return c.c.Update(ctx, cv)
	})
	if err != nil {
		c.t.Fatalf("setting ClusterVersion spec.desiredUpdate: %v", err)
	}
}

// moveTo does what the CVO and MCO's operator do on an upgrade, as far as
// kiln reads it: ClusterVersion status.desired and a Completed history
// entry name the release, no update is offered any more, and the payload
// ConfigMap names the release's OS and extensions images and version.
func (c *cluster) moveTo(ctx context.Context, o offer, ext string) {
	c.t.Helper()
	now := metav1.Now()
	c.updateCV(ctx, func(cv *configv1.ClusterVersion) {
		cv.Status.Desired = configv1.Release{Version: o.release.Version, Image: o.release.Image}
		cv.Status.History = append([]configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: o.release.Version,
			Image: o.release.Image, StartedTime: now, CompletionTime: &now, Verified: true}}, cv.Status.History...)
		cv.Status.AvailableUpdates = nil
	})
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm := &corev1.ConfigMap{}
		if err := c.c.Get(ctx, client.ObjectKey{Namespace: payload.Namespace, Name: payload.OSImageURLMap}, cm); err != nil {
			return err
		}
		cm.Data["baseOSContainerImage"] = o.osImage
		cm.Data["baseOSExtensionsContainerImage"] = ext
		cm.Data["releaseVersion"] = o.release.Version
		return c.c.Update(ctx, cm)
	})
	if err != nil {
		c.t.Fatalf("moving the payload ConfigMap to release %s: %v", o.release.Version, err)
	}
}

func (c *cluster) updateCV(ctx context.Context, edit func(*configv1.ClusterVersion)) {
	c.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cv := &configv1.ClusterVersion{}
		if err := c.c.Get(ctx, client.ObjectKey{Name: payload.ClusterVersionName}, cv); err != nil {
			return err
		}
		edit(cv)
		return c.c.Status().Update(ctx, cv)
	})
	if err != nil {
		c.t.Fatalf("updating ClusterVersion status: %v", err)
	}
}

// assertAheadRun: r is an upgrade-ahead run of pool that ran every stage
// but rollout and bootimages and succeeded, or, when failing, stopped at
// kmod-build with the report's FAILED_STAGE saying so.
func (c *cluster) assertAheadRun(ctx context.Context, r *pipelinev1.PipelineRun, pool string, failing bool) {
	c.t.Helper()
	if got := r.Labels[trigger.LabelTrigger]; got != trigger.TriggerUpgradeAhead {
		c.t.Errorf("run %s: trigger %q, want %q", r.Name, got, trigger.TriggerUpgradeAhead)
	}
	results := runResults(r)
	if _, ok := results["ROLLOUT_STATE"]; ok {
		c.t.Errorf("run %s: ROLLOUT_STATE %q: an upgrade-ahead run rolls nothing out", r.Name, results["ROLLOUT_STATE"])
	}
	if failing {
		if r.Status.GetCondition("Succeeded").IsTrue() || results["FAILED_STAGE"] != "kmod-build" {
			c.t.Errorf("run %s: succeeded %v, FAILED_STAGE %q (%q), want a failure at kmod-build", r.Name,
				r.Status.GetCondition("Succeeded").IsTrue(), results["FAILED_STAGE"], results["FAILURE"])
		}
		c.assertTaskRunsFailing(ctx, r, []string{"render", "kmod-build", "report"}, "kmod-build")
		return
	}
	if !r.Status.GetCondition("Succeeded").IsTrue() {
		c.t.Errorf("PipelineRun %s did not succeed: %s\n%s", r.Name, r.Status.GetCondition("Succeeded").GetMessage(), c.failedTasks(ctx, r))
		return
	}
	want := []string{"render", "image-build", "image-sign", "verify", "report"}
	if pool == "infra" {
		want = append(want, "kmod-build", "kmod-sign")
	}
	c.assertTaskRunsFailing(ctx, r, want, "")
	if !strings.HasPrefix(results["IMAGE_DIGEST"], "sha256:") {
		c.t.Errorf("run %s: IMAGE_DIGEST %q", r.Name, results["IMAGE_DIGEST"])
	}
}

// clusterWrites are the resourceVersions of what only a rollout changes:
// kiln's osImageURL MachineConfigs and the MachineSets, and the nodes'
// current images.
func (c *cluster) clusterWrites(ctx context.Context) map[string]string {
	c.t.Helper()
	out := map[string]string{}
	for _, pool := range wavePools {
		mc := &mcfgv1.MachineConfig{}
		if err := c.c.Get(ctx, client.ObjectKey{Name: rollout.MachineConfigName(pool)}, mc); err != nil {
			c.t.Fatal(err)
		}
		out["MachineConfig/"+mc.Name] = mc.ResourceVersion
	}
	sets := &machinev1beta1.MachineSetList{}
	if err := c.c.List(ctx, sets); err != nil {
		c.t.Fatal(err)
	}
	for _, ms := range sets.Items {
		out["MachineSet/"+ms.Namespace+"/"+ms.Name] = ms.ResourceVersion
	}
	nodes := &corev1.NodeList{}
	if err := c.c.List(ctx, nodes); err != nil {
		c.t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if img, ok := n.Annotations["machineconfiguration.openshift.io/currentImage"]; ok {
			out["Node/"+n.Name] = img
		}
	}
	return out
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// pinnedSets are the names of the trigger's PinnedImageSets for pool and
// release.
func (c *cluster) pinnedSets(ctx context.Context, pool, release string) []string {
	c.t.Helper()
	list := &mcfgv1.PinnedImageSetList{}
	if err := c.c.List(ctx, list, client.MatchingLabels{trigger.LabelPool: pool, trigger.LabelTargetRelease: release}); err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Name)
	}
	return out
}

// assertPinned waits for pool's PinnedImageSet for release naming the image
// digest and for the pool to list it in spec.pinnedImageSets.
func (c *cluster) assertPinned(ctx context.Context, pool, release, digest string) {
	c.t.Helper()
	c.poll(ctx, 2*time.Minute, fmt.Sprintf("pool %s to pin its image for release %s", pool, release), func() bool {
		list := &mcfgv1.PinnedImageSetList{}
		if err := c.c.List(ctx, list, client.MatchingLabels{trigger.LabelPool: pool, trigger.LabelTargetRelease: release}); err != nil {
			c.t.Fatal(err)
		}
		p := &mcfgv1.MachineConfigPool{}
		if err := c.c.Get(ctx, client.ObjectKey{Name: pool}, p); err != nil {
			c.t.Fatal(err)
		}
		for _, s := range list.Items {
			names := slices.ContainsFunc(s.Spec.PinnedImages, func(i mcfgv1.PinnedImageRef) bool { return strings.HasSuffix(string(i.Name), "@"+digest) })
			listed := slices.ContainsFunc(p.Spec.PinnedImageSets, func(r mcfgv1.PinnedImageSetRef) bool { return r.Name == s.Name })
			if names && listed {
				return true
			}
		}
		return false
	})
}

// assertStatusLine waits for kiln-upgrade-status's line of pool and
// release to start with prefix.
func (c *cluster) assertStatusLine(ctx context.Context, pool, release, prefix string) {
	c.t.Helper()
	key := pool + "_" + release
	var got string
	c.poll(ctx, 2*time.Minute, fmt.Sprintf("%s line %s to start with %q", trigger.UpgradeStatusConfigMap, key, prefix), func() bool {
		cm := &corev1.ConfigMap{}
		if err := c.c.Get(ctx, client.ObjectKey{Namespace: kilnNS, Name: trigger.UpgradeStatusConfigMap}, cm); err != nil {
			return false
		}
		got = cm.Data[key]
		return strings.HasPrefix(got, prefix)
	})
	c.t.Logf("%s %s: %s", trigger.UpgradeStatusConfigMap, key, got)
}

// assertCVEvent waits for an event of reason on ClusterVersion version
// whose message contains text.
func (c *cluster) assertCVEvent(ctx context.Context, reason, text string) {
	c.t.Helper()
	c.poll(ctx, 2*time.Minute, fmt.Sprintf("a %s event on ClusterVersion %s saying %q", reason, payload.ClusterVersionName, text), func() bool {
		evs := &corev1.EventList{}
		if err := c.c.List(ctx, evs); err != nil {
			c.t.Fatal(err)
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind == "ClusterVersion" && e.InvolvedObject.Name == payload.ClusterVersionName &&
				e.Reason == reason && strings.Contains(e.Message, text)
		})
	})
}
