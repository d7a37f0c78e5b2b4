package trigger

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/rollout"
)

const wait = 30 * time.Second

// TestTrigger walks one cluster through the trigger's life: opt-in, no-op
// reconciles, bursts, cancel and queue, each trigger reason, standalone
// boot images, bad config and revert. Steps share the apiserver, so they
// run in order.
func TestTrigger(t *testing.T) {
	h := newHarness(t)
	h.create(pool("worker", true), pool("infra", false),
		machineConfig("00-worker", "worker", "a=1"), machineConfig("50-infra", "infra", "b=1"))
	h.start(500 * time.Millisecond)
	ctx := context.Background()

	var first *pipelinev1.PipelineRun
	t.Run("an enabled pool gets one run, a disabled pool none", func(t *testing.T) {
		eventually(t, wait, "worker's first run", func() bool { return len(h.runs("worker")) == 1 })
		first = h.runs("worker")[0]
		fp := first.Labels[LabelFingerprint]
		if first.Name != RunName("worker", TriggerMachineConfig, fp) || param(first, "trigger") != TriggerMachineConfig || first.Labels[LabelTrigger] != TriggerMachineConfig || first.Labels[LabelPool] != "worker" {
			t.Fatalf("run %s labels %v", first.Name, first.Labels)
		}
		if param(first, "pool") != "worker" || param(first, "repository") != "registry.example/os-worker" ||
			param(first, "update-boot-images") != "true" || param(first, "kiln-image") == "" {
			t.Fatalf("params %+v", first.Spec.Params)
		}
		// kiln-config's three, and the registries folder when the Pipeline
		// declares it; no registry-auth, since this cluster has no pull secret.
		var p pipelinev1.Pipeline
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kiln-node-image"}, &p); err != nil {
			t.Fatal(err)
		}
		want := []string{"work", "signing-key", "public-key"}
		if slices.ContainsFunc(p.Spec.Workspaces, func(w pipelinev1.PipelineWorkspaceDeclaration) bool { return w.Name == WorkspaceRegistries }) {
			want = append(want, WorkspaceRegistries)
		}
		var got []string
		for _, w := range first.Spec.Workspaces {
			got = append(got, w.Name)
		}
		if first.Spec.PipelineRef.Name != "kiln-node-image" || !slices.Equal(got, want) {
			t.Fatalf("pipelineRef %v, workspaces %v, want %v", first.Spec.PipelineRef, got, want)
		}
		sa := map[string]string{}
		for _, s := range first.Spec.TaskRunSpecs {
			sa[s.PipelineTaskName] = s.ServiceAccountName
		}
		if sa["render"] != "kiln-render" || sa["rollout"] != "kiln-rollout" || sa["report"] != "kiln-report" {
			t.Fatalf("per-task ServiceAccounts %v", sa)
		}
		if _, ok := h.event("worker", ReasonCreated); !ok {
			t.Fatal("no RunCreated event on the pool")
		}
		consistently(t, 2*time.Second, "the disabled pool infra got a run", func() bool { return len(h.runs("infra")) > 0 })
	})

	t.Run("unchanged inputs make nothing", func(t *testing.T) {
		h.update(&mcfgv1.MachineConfigPool{}, "worker", "", func(o client.Object) {
			o.SetAnnotations(map[string]string{"unrelated": time.Now().String()})
		})
		consistently(t, 2*time.Second, "a second run for the same fingerprint", func() bool { return len(h.runs("worker")) != 1 })
	})

	t.Run("50 edits in 2s coalesce into one run, which cancels the run before rollout", func(t *testing.T) {
		h.progress(first.Name, []string{"render", "image-build"}, "")
		for i := range 50 {
			h.setKarg("00-worker", fmt.Sprintf("a=%d", i+2))
			time.Sleep(40 * time.Millisecond)
		}
		eventually(t, wait, "a second run", func() bool { return len(h.runs("worker")) >= 2 })
		consistently(t, 3*time.Second, "more than one run for the burst", func() bool { return len(h.runs("worker")) != 2 })
		runs := h.runs("worker")
		if runs[1].Name != first.Name || runs[1].Spec.Status != pipelinev1.PipelineRunSpecStatusCancelledRunFinally {
			t.Fatalf("first run %s spec.status %q, want CancelledRunFinally", runs[1].Name, runs[1].Spec.Status)
		}
		if runs[0].Labels[LabelTrigger] != TriggerMachineConfig || runs[0].Spec.Status != "" {
			t.Fatalf("new run %s: trigger %q status %q", runs[0].Name, runs[0].Labels[LabelTrigger], runs[0].Spec.Status)
		}
		// What changed is named, for the report's first line and the Dashboard.
		if got := param(runs[0], "changes"); got != "MachineConfig edited 00-worker" || runs[0].Annotations[AnnotChanges] != got {
			t.Fatalf("new run %s: changes param %q, annotation %q", runs[0].Name, got, runs[0].Annotations[AnnotChanges])
		}
		if !strings.HasPrefix(runs[0].Name, "kiln-worker-machineconfig-") {
			t.Fatalf("run name %s does not show pool and trigger", runs[0].Name)
		}
	})

	t.Run("a run in rollout finishes; the next waits pending, then starts", func(t *testing.T) {
		cur := h.runs("worker")[0]
		h.progress(cur.Name, []string{"render", "image-build", "rollout"}, "")
		h.setKarg("00-worker", "a=rollout")
		eventually(t, wait, "a queued run", func() bool { return len(h.runs("worker")) == 3 })
		next := h.runs("worker")[0]
		if next.Spec.Status != pipelinev1.PipelineRunSpecStatusPending {
			t.Fatalf("run %s spec.status %q, want PipelineRunPending", next.Name, next.Spec.Status)
		}
		if got := h.runs("worker")[1]; got.Name != cur.Name || got.Spec.Status != "" {
			t.Fatalf("the run in rollout was touched: %s status %q", got.Name, got.Spec.Status)
		}
		h.progress(cur.Name, []string{"render", "image-build", "rollout", "bootimages"}, corev1.ConditionTrue)
		eventually(t, wait, "the queued run to start", func() bool {
			var pr pipelinev1.PipelineRun
			_ = h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: next.Name}, &pr)
			return pr.Spec.Status == ""
		})
		h.progress(next.Name, []string{"render", "rollout"}, corev1.ConditionTrue)
	})

	t.Run("trigger reasons: moduleday0, payload, manual", func(t *testing.T) {
		md := &kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Name: "kmod-worker", Namespace: ns}}
		md.Spec.MachineConfigPoolSelector = map[string]string{"node-role.kubernetes.io/worker": ""}
		md.Spec.OSMapping.ContainerImage = "registry.example/kmod:1"
		md.Spec.OSMapping.Literal = "9.6.20250101-0"
		steps := []struct {
			want, changes string
			do            func()
		}{
			{TriggerModuleDay0, "ModuleDay0 " + ns + "/kmod-worker added", func() { h.create(md) }},
			{TriggerPayload, "base image sha256:", func() {
				h.update(&corev1.ConfigMap{}, payload.OSImageURLMap, payload.Namespace, func(o client.Object) {
					o.(*corev1.ConfigMap).Data = osImageURLMap("2").Data
				})
			}},
			{TriggerManual, `rebuild requested (kiln.dev/rebuild="please")`, func() {
				h.update(&mcfgv1.MachineConfigPool{}, "worker", "", func(o client.Object) {
					o.SetAnnotations(map[string]string{AnnotRebuild: "please"})
				})
			}},
		}
		for _, s := range steps {
			n := len(h.runs("worker"))
			s.do()
			eventually(t, wait, s.want+" run", func() bool { return len(h.runs("worker")) == n+1 })
			r := h.runs("worker")[0]
			if got := r.Labels[LabelTrigger]; got != s.want || param(r, "trigger") != s.want {
				t.Fatalf("run %s trigger %q, want %q", r.Name, got, s.want)
			}
			if got := param(r, "changes"); !strings.HasPrefix(got, s.changes) {
				t.Fatalf("run %s changes %q, want %q…", r.Name, got, s.changes)
			}
			h.progress(r.Name, []string{"render", "rollout"}, corev1.ConditionTrue)
		}
	})

	t.Run("coreos-bootimages alone starts the bootimages pipeline", func(t *testing.T) {
		h.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: BootImagesConfigMap, Namespace: payload.Namespace},
			Data: map[string]string{"stream": `{"stream":"rhcos-4.18"}`}})
		eventually(t, wait, "a standalone bootimages run", func() bool { return len(bootRuns(h)) == 1 })
		r := bootRuns(h)[0]
		if r.Spec.PipelineRef.Name != "kiln-bootimages" || !strings.HasPrefix(r.Name, "kiln-bootimages-") || r.Labels[LabelTrigger] != TriggerPayload {
			t.Fatalf("bootimages run %s: %v %v", r.Name, r.Spec.PipelineRef, r.Labels)
		}
		consistently(t, 2*time.Second, "a node-image run for a boot image change", func() bool { return len(h.live("worker")) > 0 })
		h.progress(r.Name, []string{"bootimages"}, corev1.ConditionTrue)
	})

	// The CVO writes the two ConfigMaps one after the other; the stream
	// coming first, over a second apart (past --settle, within
	// --max-settle), must not be taken for a change alone.
	t.Run("an upgrade writing the boot images, then the OS image is one node-image run with the bootimages stage", func(t *testing.T) {
		n := len(h.runs("worker"))
		h.update(&corev1.ConfigMap{}, BootImagesConfigMap, payload.Namespace, func(o client.Object) {
			o.(*corev1.ConfigMap).Data["stream"] = `{"stream":"rhcos-4.19"}`
		})
		time.Sleep(1500 * time.Millisecond)
		h.update(&corev1.ConfigMap{}, payload.OSImageURLMap, payload.Namespace, func(o client.Object) {
			o.(*corev1.ConfigMap).Data = osImageURLMap("3").Data
		})
		eventually(t, wait, "the payload run", func() bool { return len(h.runs("worker")) == n+1 })
		consistently(t, 3*time.Second, "a standalone bootimages run next to the node-image run", func() bool { return len(bootRuns(h)) != 1 })
		r := h.runs("worker")[0]
		if r.Annotations[AnnotBootImages] == "" || param(r, "update-boot-images") != "true" {
			t.Fatalf("payload run %s: annotations %v", r.Name, r.Annotations)
		}
		h.progress(r.Name, []string{"render", "rollout", "bootimages"}, corev1.ConditionTrue)
	})

	t.Run("a bad kiln-config is reported and makes no run", func(t *testing.T) {
		h.update(&corev1.ConfigMap{}, ConfigName, ns, func(o client.Object) { o.(*corev1.ConfigMap).Data["timeout"] = "soon" })
		n := len(h.runs("worker"))
		h.setKarg("00-worker", "a=bad-config")
		eventually(t, wait, "an InvalidConfig event", func() bool {
			msg, ok := h.event("worker", ReasonConfig)
			return ok && strings.Contains(msg, "ConfigMap kiln/kiln-config: data.timeout")
		})
		if len(h.runs("worker")) != n {
			t.Fatal("a run was made under a bad config")
		}
		h.update(&corev1.ConfigMap{}, ConfigName, ns, func(o client.Object) { delete(o.(*corev1.ConfigMap).Data, "timeout") })
		eventually(t, wait, "the run once the config is fixed", func() bool { return len(h.runs("worker")) == n+1 })
	})

	t.Run("removing kiln.dev/enabled reverts the pool to the payload's OS", func(t *testing.T) {
		mc := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: rollout.MachineConfigName("worker"),
			Labels: map[string]string{rollout.ManagedLabel: "true", "machineconfiguration.openshift.io/role": "worker"}},
			Spec: mcfgv1.MachineConfigSpec{OSImageURL: "registry.example/os-worker@sha256:" + strings.Repeat("e", 64)}}
		h.create(mc)
		h.update(&mcfgv1.MachineConfigPool{}, "worker", "", func(o client.Object) {
			l := o.GetLabels()
			delete(l, LabelEnabled)
			o.SetLabels(l)
		})
		eventually(t, wait, "the osImageURL MachineConfig to be deleted", func() bool {
			err := h.c.Get(ctx, client.ObjectKeyFromObject(mc), &mcfgv1.MachineConfig{})
			return err != nil
		})
		if msg, ok := h.event("worker", ReasonReverted); !ok || !strings.Contains(msg, mc.Name) {
			t.Fatalf("Reverted event %q %v", msg, ok)
		}
		if live := h.live("worker"); len(live) != 0 {
			t.Fatalf("runs still live after the revert: %s", live[0].Name)
		}
	})
}

func bootRuns(h *harness) []*pipelinev1.PipelineRun {
	var out []*pipelinev1.PipelineRun
	for _, r := range h.runs("") {
		if r.Labels[LabelPipeline] == pipelineBootImages {
			out = append(out, r)
		}
	}
	return out
}

// TestWaves: with canary (wave 0), worker (1) and master (2), a payload
// change runs the canary first; worker waits for the canary's success,
// master for worker's.
func TestWaves(t *testing.T) {
	h := newHarness(t)
	h.create(pool("canary", true, LabelWave, "0"), pool("worker", true, LabelWave, "1"), pool("master", true, LabelWave, "2"),
		machineConfig("00-worker", "worker", "a=1"), machineConfig("00-master", "master", "m=1"), machineConfig("50-canary", "canary", "c=1"))
	h.start(300 * time.Millisecond)
	eventually(t, wait, "the canary's run", func() bool { return len(h.runs("canary")) == 1 })
	consistently(t, 2*time.Second, "worker or master started before the canary succeeded", func() bool {
		return len(h.runs("worker"))+len(h.runs("master")) > 0
	})
	if msg, ok := h.event("worker", ReasonWaitingWave); !ok || !strings.Contains(msg, "canary (wave 0)") {
		t.Fatalf("WaitingForWave event on worker: %q %v", msg, ok)
	}
	h.progress(h.runs("canary")[0].Name, []string{"render", "rollout"}, corev1.ConditionFalse)
	consistently(t, 2*time.Second, "worker started after the canary failed", func() bool { return len(h.runs("worker")) > 0 })

	// A fixed canary config succeeds; worker goes, then master.
	h.setKarg("50-canary", "c=2")
	eventually(t, wait, "the canary's second run", func() bool { return len(h.runs("canary")) == 2 })
	h.progress(h.runs("canary")[0].Name, []string{"render", "rollout"}, corev1.ConditionTrue)
	eventually(t, wait, "worker's run", func() bool { return len(h.runs("worker")) == 1 })
	if len(h.runs("master")) != 0 {
		t.Fatal("master started with worker")
	}
	h.progress(h.runs("worker")[0].Name, []string{"render", "rollout"}, corev1.ConditionTrue)
	eventually(t, wait, "master's run", func() bool { return len(h.runs("master")) == 1 })
}
