package trigger

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
)

// samplePayload is the payload facts of sample release v: its base OS,
// extensions and driver-toolkit images, pinned by digests made from the
// version (the trigger reads only the release image; these need not
// exist).
func samplePayload(v string) payload.Facts {
	ref := func(what string) string {
		return fmt.Sprintf("quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:%x", sha256.Sum256([]byte(what+v)))
	}
	return payload.Facts{BaseOSImage: ref("rhel-coreos"), ExtensionsImage: ref("rhel-coreos-extensions"), DriverToolkitImage: ref("driver-toolkit")}
}

// offered is sample release v, pushed on first use to the harness's real
// registry as a release image naming samplePayload(v)'s images, and
// given by digest as the CVO offers it.
func (h *harness) offered(v string) configv1.Release {
	h.t.Helper()
	f := samplePayload(v)
	return h.pushRelease(v, map[string]string{payload.TagRHELCoreOS: f.BaseOSImage,
		payload.TagRHELCoreOSExtensions: f.ExtensionsImage, payload.TagDriverToolkit: f.DriverToolkitImage})
}

// pushRelease pushes release v with these image-references tags.
func (h *harness) pushRelease(v string, tags map[string]string) configv1.Release {
	h.t.Helper()
	if h.reg == nil {
		h.reg = env.StartRegistry(h.t, env.RegistryOptions{})
	}
	return configv1.Release{Version: v, Image: env.PushRelease(h.t, h.reg.Ref("ocp/release:"+v), v, tags)}
}

// offerUpdates creates the ClusterVersion running 4.18.2, or sets the
// updates it offers, as the CVO writes them to status.
func (h *harness) offerUpdates(updates ...configv1.Release) {
	h.t.Helper()
	ctx := context.Background()
	var cv configv1.ClusterVersion
	if err := h.c.Get(ctx, client.ObjectKey{Name: "version"}, &cv); err != nil {
		cv = configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}, Spec: configv1.ClusterVersionSpec{ClusterID: "00000000-0000-0000-0000-000000000001"}}
		h.create(&cv)
	}
	cv.Status.Desired = h.offered("4.18.2")
	cv.Status.AvailableUpdates = updates
	if err := h.c.Status().Update(ctx, &cv); err != nil {
		h.t.Fatalf("setting ClusterVersion status.availableUpdates: %v", err)
	}
}

// aheadOf are pool's upgrade-ahead runs, newest first.
func (h *harness) aheadOf(pool string) []*pipelinev1.PipelineRun {
	var out []*pipelinev1.PipelineRun
	for _, r := range h.runs(pool) {
		if r.Labels[LabelPipeline] == pipelineAhead {
			out = append(out, r)
		}
	}
	return out
}

// liveReleases are the target releases of pool's live upgrade-ahead runs.
func (h *harness) liveReleases(pool string) []string {
	var out []string
	for _, r := range h.aheadOf(pool) {
		if stateOf(r) != runDone {
			out = append(out, r.Labels[LabelTargetRelease])
		}
	}
	sort.Strings(out)
	return out
}

// TestUpgradeAheadRunsForTheSelectedTargets: the ClusterVersion offers
// three updates by digest (sample release images in a real registry) and
// a newer one by tag; with kiln-config's default selection each enabled
// pool gets one upgrade-ahead run for the newest z-stream and one for the
// newest y-stream, named, labelled and with params for its release and
// rollout off, and the os-image, extensions-image and dtk-image params
// are that release's images (read from its release image), not the
// running release's; a disabled pool gets none, the pool's own run is
// unchanged (no target params), and the update offered by tag is told as
// skipped on the ClusterVersion.
func TestUpgradeAheadRunsForTheSelectedTargets(t *testing.T) {
	h := newHarness(t)
	byTag := configv1.Release{Version: "4.18.9", Image: "quay.io/openshift-release-dev/ocp-release:4.18.9-x86_64"}
	h.offerUpdates(h.offered("4.18.3"), h.offered("4.19.0"), h.offered("4.18.5"), byTag)
	h.create(pool("worker", true), pool("infra", false), machineConfig("50-worker", "worker", "x=1"))
	h.start(200 * time.Millisecond)
	eventually(t, wait, "two upgrade-ahead runs for worker", func() bool { return len(h.aheadOf("worker")) == 2 })
	consistently(t, time.Second, "a third upgrade-ahead run, or one for the disabled pool", func() bool {
		return len(h.aheadOf("worker")) != 2 || len(h.aheadOf("infra")) != 0
	})
	if d := cmp.Diff([]string{"4.18.5", "4.19.0"}, h.liveReleases("worker")); d != "" {
		t.Fatalf("target releases (-want +got):\n%s", d)
	}
	for _, r := range h.aheadOf("worker") {
		v := r.Labels[LabelTargetRelease]
		got := map[string]string{"trigger": r.Labels[LabelTrigger], "name": r.Name[:len("kiln-worker-ahead-")+len(v)], "image": r.Annotations[AnnotTargetReleaseImage],
			paramRollout: param(r, paramRollout), "update-boot-images": param(r, "update-boot-images"),
			paramTargetRelease: param(r, paramTargetRelease), paramTargetReleaseImage: param(r, paramTargetReleaseImage),
			paramOSImage: param(r, paramOSImage), paramExtensionsImage: param(r, paramExtensionsImage), paramDTKImage: param(r, paramDTKImage)}
		f := samplePayload(v)
		want := map[string]string{"trigger": TriggerUpgradeAhead, "name": "kiln-worker-ahead-" + v, "image": h.offered(v).Image,
			paramRollout: "false", "update-boot-images": "false", paramTargetRelease: v, paramTargetReleaseImage: h.offered(v).Image,
			paramOSImage: f.BaseOSImage, paramExtensionsImage: f.ExtensionsImage, paramDTKImage: f.DriverToolkitImage}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("upgrade-ahead run %s (-want +got):\n%s", r.Name, d)
		}
	}
	var own []*pipelinev1.PipelineRun
	for _, r := range h.runs("worker") {
		if r.Labels[LabelPipeline] == pipelineNodeImage {
			own = append(own, r)
		}
	}
	if len(own) != 1 || param(own[0], paramRollout) != "" {
		t.Fatalf("worker's own runs: %d, want 1 that rolls out (rollout param %q)", len(own), param(own[0], paramRollout))
	}
	for _, p := range []string{paramOSImage, paramExtensionsImage, paramDTKImage, paramTargetRelease} {
		if v := param(own[0], p); v != "" {
			t.Errorf("worker's own run has %s %q, want none (the running release's)", p, v)
		}
	}
	if _, ok := h.event("worker", ReasonAheadCreated); !ok {
		t.Errorf("no %s event on pool worker", ReasonAheadCreated)
	}
	if msg, _ := h.event("version", ReasonTargetSkipped); !strings.Contains(msg, `release 4.18.9: image "`+byTag.Image+`" is not a reference by digest`) {
		t.Errorf("ClusterVersion %s event %q, want it to name the release offered by tag", ReasonTargetSkipped, msg)
	}
}

// TestUpgradeAheadNewerTargetCancelsTheOlderRun: a newer z-stream offered
// while the run for the previous one is still going cancels that run,
// marked as superseded, and starts one for the newer release.
func TestUpgradeAheadNewerTargetCancelsTheOlderRun(t *testing.T) {
	h := newHarness(t)
	h.update(&corev1.ConfigMap{}, ConfigName, ns, func(o client.Object) { o.(*corev1.ConfigMap).Data[keyUpgradeAhead] = "z-stream" })
	h.offerUpdates(h.offered("4.18.3"))
	h.create(pool("worker", true), machineConfig("50-worker", "worker", "x=1"))
	h.start(200 * time.Millisecond)
	eventually(t, wait, "an upgrade-ahead run for 4.18.3", func() bool { return cmp.Equal(h.liveReleases("worker"), []string{"4.18.3"}) })
	old := h.aheadOf("worker")[0]
	h.progress(old.Name, []string{"render", "image-build"}, "")

	h.offerUpdates(h.offered("4.18.3"), h.offered("4.18.4"))
	eventually(t, wait, "the 4.18.4 run replaces the 4.18.3 run", func() bool { return cmp.Equal(h.liveReleases("worker"), []string{"4.18.4"}) })
	var got pipelinev1.PipelineRun
	if err := h.c.Get(context.Background(), client.ObjectKeyFromObject(old), &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Status != pipelinev1.PipelineRunSpecStatusCancelledRunFinally || got.Annotations[AnnotSupersededBy] == "" {
		t.Fatalf("4.18.3 run %s: spec.status %q, %s %q; want CancelledRunFinally and superseded", got.Name, got.Spec.Status, AnnotSupersededBy, got.Annotations[AnnotSupersededBy])
	}
	if _, ok := h.event("worker", ReasonAheadCancelled); !ok {
		t.Errorf("no %s event on pool worker", ReasonAheadCancelled)
	}
}

// TestNoUpgradeAheadRunWithoutAnAvailableUpdate: a ClusterVersion that
// offers nothing (or only its own release) gets the pool its own run and
// no upgrade-ahead run.
func TestNoUpgradeAheadRunWithoutAnAvailableUpdate(t *testing.T) {
	h := newHarness(t)
	h.offerUpdates(h.offered("4.18.2"))
	h.create(pool("worker", true), machineConfig("50-worker", "worker", "x=1"))
	h.start(200 * time.Millisecond)
	eventually(t, wait, "worker's own run", func() bool { return len(h.runs("worker")) == 1 })
	consistently(t, 2*time.Second, "an upgrade-ahead run without an available update", func() bool { return len(h.aheadOf("worker")) != 0 })
}

// finish plays Tekton's part at the end of a run: its Succeeded condition
// and the pipeline results its report wrote.
func (h *harness) finish(name string, done corev1.ConditionStatus, results map[string]string) {
	h.t.Helper()
	for i := 0; ; i++ {
		var pr pipelinev1.PipelineRun
		if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &pr); err != nil {
			h.t.Fatal(err)
		}
		pr.Status.Status = duckv1.Status{Conditions: duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: done, Reason: "Failed", Message: "Tasks Completed: 6 (Failed: 1)"}}}
		pr.Status.Results = nil
		for _, k := range sortedKeys(results) {
			pr.Status.Results = append(pr.Status.Results, pipelinev1.PipelineRunResult{Name: k, Value: *pipelinev1.NewStructuredValues(results[k])})
		}
		err := h.c.Status().Update(context.Background(), &pr)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || i > 10 {
			h.t.Fatalf("finishing PipelineRun %s: %v", name, err)
		}
	}
}

// TestUpgradeReadinessOnClusterVersionAndMetric: the upgrade-ahead run of
// one offered release succeeds and the other's fails at kmod-build; the
// ClusterVersion gets one event each (ready; not ready, with the stage and
// cause), kiln_upgrade_ready is 1 and 0, and once no update is offered the
// series are gone.
func TestUpgradeReadinessOnClusterVersionAndMetric(t *testing.T) {
	h := newHarness(t)
	h.offerUpdates(h.offered("4.18.3"), h.offered("4.19.0"))
	h.create(pool("worker", true), machineConfig("50-worker", "worker", "x=1"))
	h.start(200 * time.Millisecond)
	eventually(t, wait, "two upgrade-ahead runs", func() bool { return len(h.aheadOf("worker")) == 2 })
	for _, r := range h.aheadOf("worker") {
		if r.Labels[LabelTargetRelease] == "4.18.3" {
			h.finish(r.Name, corev1.ConditionTrue, nil)
		} else {
			h.finish(r.Name, corev1.ConditionFalse, map[string]string{work.ResultFailedStage: "kmod-build", work.ResultFailure: "module foo: implicit declaration of function 'bar'"})
		}
	}
	eventually(t, wait, "both runs reported", func() bool {
		for _, r := range h.aheadOf("worker") {
			if r.Annotations[AnnotReadinessReported] == "" {
				return false
			}
		}
		return true
	})
	if d := cmp.Diff(map[string]float64{"4.18.3": 1, "4.19.0": 0}, readySeries(t, "worker")); d != "" {
		t.Errorf("kiln_upgrade_ready (-want +got):\n%s", d)
	}
	if msg, ok := h.event("version", ReasonUpgradeReady); !ok || !strings.Contains(msg, "pool worker is ready for release 4.18.3") {
		t.Errorf("ClusterVersion %s event %q", ReasonUpgradeReady, msg)
	}
	msg, ok := h.event("version", ReasonUpgradeNotReady)
	if want := "pool worker is not ready for release 4.19.0: PipelineRun kiln-worker-ahead-4.19.0-"; !ok || !strings.Contains(msg, want) ||
		!strings.Contains(msg, "failed at kmod-build: module foo: implicit declaration of function 'bar'") {
		t.Errorf("ClusterVersion %s event %q, want it to name the pool, release, run, stage and cause", ReasonUpgradeNotReady, msg)
	}

	h.offerUpdates()
	eventually(t, wait, "kiln_upgrade_ready series removed", func() bool { return len(readySeries(t, "worker")) == 0 })
	var evs corev1.EventList
	if err := h.c.List(context.Background(), &evs); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == "version" && e.Count > 1 {
			t.Errorf("event %s on the ClusterVersion told %d times, want once", e.Reason, e.Count)
		}
	}
}

// readySeries reads pool's kiln_upgrade_ready series, by release.
func readySeries(t *testing.T, pool string) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	metricUpgradeReady.Collect(ch)
	close(ch)
	out := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		l := map[string]string{}
		for _, p := range d.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["pool"] == pool {
			out[l["release"]] = d.GetGauge().GetValue()
		}
	}
	return out
}

// TestUpgradeAheadTargetWithoutAReadablePayloadGetsNoRun: of the offered
// updates, 4.18.3's release image has no driver-toolkit and 4.19.0's
// cannot be read (its registry refuses connections). Neither gets an
// upgrade-ahead run; each is told once on the ClusterVersion as not ready,
// naming the pool, the release and the cause, and kiln_upgrade_ready is 0
// for both; the pool's own run is made as without them. Once 4.18.3 is
// replaced by a readable 4.18.4, that one gets its run.
func TestUpgradeAheadTargetWithoutAReadablePayloadGetsNoRun(t *testing.T) {
	h := newHarness(t)
	f := samplePayload("4.18.3")
	noDTK := h.pushRelease("4.18.3", map[string]string{payload.TagRHELCoreOS: f.BaseOSImage, payload.TagRHELCoreOSExtensions: f.ExtensionsImage})
	gone := configv1.Release{Version: "4.19.0", Image: "127.0.0.1:1/ocp/release@sha256:" + strings.Repeat("9", 64)}
	h.offerUpdates(noDTK, gone)
	h.create(pool("worker", true), machineConfig("50-worker", "worker", "x=1"))
	h.start(200 * time.Millisecond)
	eventually(t, wait, "worker's own run", func() bool { return len(h.runs("worker")) >= 1 })
	eventually(t, wait, "kiln_upgrade_ready 0 for both releases", func() bool {
		return cmp.Equal(map[string]float64{"4.18.3": 0, "4.19.0": 0}, readySeries(t, "worker"))
	})
	consistently(t, 2*time.Second, "an upgrade-ahead run for a release whose payload cannot be read", func() bool { return len(h.aheadOf("worker")) != 0 })
	if n := len(h.runs("worker")); n != 1 {
		t.Fatalf("worker has %d runs, want its own run only", n)
	}
	msgs := h.events("version", ReasonUpgradeNotReady)
	for _, want := range []string{
		"pool worker is not ready for release 4.18.3: no upgrade-ahead run: its payload cannot be read: reading release 4.18.3: release image " + noDTK.Image + `: release-manifests/image-references has no tag "driver-toolkit"`,
		"pool worker is not ready for release 4.19.0: no upgrade-ahead run: its payload cannot be read: reading release 4.19.0: reading release image \"" + gone.Image + `"`,
	} {
		if !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, want) }) {
			t.Errorf("no ClusterVersion %s event starting %q in %q", ReasonUpgradeNotReady, want, msgs)
		}
	}

	h.offerUpdates(h.offered("4.18.4"), gone)
	eventually(t, wait, "an upgrade-ahead run for 4.18.4", func() bool { return cmp.Equal(h.liveReleases("worker"), []string{"4.18.4"}) })
	if got, want := param(h.aheadOf("worker")[0], paramDTKImage), samplePayload("4.18.4").DriverToolkitImage; got != want {
		t.Errorf("4.18.4 run dtk-image %q, want %q", got, want)
	}
	var evs corev1.EventList
	if err := h.c.List(context.Background(), &evs); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == "version" && e.Reason == ReasonUpgradeNotReady && e.Count > 1 {
			t.Errorf("event %q on the ClusterVersion told %d times, want once", e.Message, e.Count)
		}
	}
}

// events are the messages of the events of reason on object name.
func (h *harness) events(name, reason string) []string {
	h.t.Helper()
	h.event(name, reason) // wait for the first
	var evs corev1.EventList
	if err := h.c.List(context.Background(), &evs); err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}
