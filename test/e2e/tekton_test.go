package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/examples"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/pipeline"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/trigger"
)

// wavePools are the sample's enabled pools in wave order (kiln.dev/wave).
var wavePools = []string{"worker", "master", "infra"}

// TestRealTekton is issue 9's scenario on real Tekton: the trigger,
// installed from config/, makes a PipelineRun per pool; every task runs
// in a real pod on a real kubelet; images are pushed, signed and
// verified; mcosim rolls the pools out; the worker run patches the
// MachineSets. Then one MachineConfig edit makes exactly one run, and a
// payload change makes a run for every pool, in wave order. Tekton Chains
// signs and attests every image. Last, a Git push through Tekton Triggers
// makes one GitOps run (testGitOpsPush), kiln-reproduce rebuilds infra's
// image from its attestation (testReproduce), and offered releases are
// prepared ahead and reused by the upgrade (testUpgradeAhead). Then, on the
// same cluster, each catalog resource's tests/ folder runs as
// tektoncd/catalog's CI runs it (testCatalog).
func TestRealTekton(t *testing.T) {
	c := startCluster(t)
	ctx := t.Context()

	// 1. Install: one run per pool, in wave order.
	first := c.waitWaves(ctx, wavePools, nil, trigger.TriggerMachineConfig, 25*time.Minute)
	for _, pool := range wavePools {
		c.assertRun(ctx, first[pool])
		c.assertRunLevel(ctx, first[pool], "first run for this pool")
	}
	c.assertMachineSetsPatched(ctx)

	// 2. One MachineConfig edit: exactly one new run, for that MC's pool.
	// A master MC: worker's MCs are also infra's (a custom pool inherits
	// worker's, as in MCO), so editing one rightly makes two runs.
	known := c.runNames(ctx)
	c.noteChange("MachineConfig 50-master-chrony edited", "master")
	c.editMachineConfig(ctx, "50-master-chrony")
	edited := c.waitWaves(ctx, []string{"master"}, known, trigger.TriggerMachineConfig, 10*time.Minute)
	c.assertRun(ctx, edited["master"])
	c.assertRunLevel(ctx, edited["master"], "MachineConfig edited 50-master-chrony")
	c.settle()
	c.assertRunCount(ctx, map[string]int{"worker": 1, "master": 2, "infra": 1})

	// 3. A payload change: a run for every pool, in wave order.
	known = c.runNames(ctx)
	c.noteChange("payload's base image changed")
	c.changePayload(ctx)
	upgrade := c.waitWaves(ctx, wavePools, known, trigger.TriggerPayload, 25*time.Minute)
	for _, pool := range wavePools {
		c.assertRun(ctx, upgrade[pool])
		c.assertRunLevel(ctx, upgrade[pool], "base image sha256:")
	}
	c.settle()
	c.assertRunCount(ctx, map[string]int{"worker": 2, "master": 3, "infra": 2})

	// 4. A Git push to the GitOps repository, through Tekton Triggers.
	c.testGitOpsPush(ctx)

	// 5. The drift gate: MCO (mcosim with a render quirk) renders one pool
	// differently from kiln's prediction; no node moves (drift_test.go).
	t.Run("drift gate stops the master rollout before any node moves", func(t *testing.T) { c.testDriftGate(ctx, t) })

	// 6. An independent rebuild of infra's image (the buildah path on a
	// signed kmod base) from its attestation gives the same digests
	// (reproduce_test.go).
	t.Run("reproduce rebuilds infra's image from its attestation", func(t *testing.T) { c.testReproduce(ctx, t, upgrade["infra"]) })

	// 7. Upgrade-ahead (ahead_test.go): two offered releases get each
	// pool's next image built with no rollout; a broken kernel module is
	// NotReady before any upgrade; the upgrade then reuses every image.
	t.Run("upgrade-ahead prepares the offered release and the upgrade reuses it", func(t *testing.T) { c.testUpgradeAhead(ctx, t) })
	c.printRuns(ctx)

	// 5. The catalog's tests/ folders, one subtest per resource.
	c.testCatalog(ctx)
}

// waitWaves waits, pool by pool in the given order, for one run not in
// known and for it to succeed, and checks the wave order: a pool's run
// starts only after the previous pool's run succeeded.
func (c *cluster) waitWaves(ctx context.Context, pools []string, known map[string]bool, reason string, timeout time.Duration) map[string]*pipelinev1.PipelineRun {
	c.t.Helper()
	runs := map[string]*pipelinev1.PipelineRun{}
	var prevDone time.Time
	for _, pool := range pools {
		r := c.waitRun(ctx, pool, func(r *pipelinev1.PipelineRun) bool { return !known[r.Name] }, timeout)
		if got := r.Labels[trigger.LabelTrigger]; got != reason {
			c.t.Errorf("run %s: trigger label %q, want %q", r.Name, got, reason)
		}
		r = c.waitDone(ctx, r, timeout)
		if r.Status.StartTime != nil && r.Status.StartTime.Time.Before(prevDone) {
			c.t.Errorf("wave order: run %s of pool %s started at %s, before the previous wave ended at %s",
				r.Name, pool, r.Status.StartTime.Format(time.RFC3339), prevDone.Format(time.RFC3339))
		}
		prevDone = r.Status.CompletionTime.Time
		runs[pool] = r
	}
	return runs
}

// runNames is the set of every PipelineRun's name so far.
func (c *cluster) runNames(ctx context.Context) map[string]bool {
	list := &pipelinev1.PipelineRunList{}
	if err := c.c.List(ctx, list, client.InNamespace(kilnNS)); err != nil {
		c.t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range list.Items {
		names[r.Name] = true
	}
	return names
}

// settle gives the trigger time to make a run it should not make (its
// settle delay is 1 s, plus a resync), before the run counts are checked.
func (c *cluster) settle() { time.Sleep(5 * time.Second) }

func (c *cluster) listRuns(ctx context.Context, pool string) []pipelinev1.PipelineRun {
	list := &pipelinev1.PipelineRunList{}
	if err := c.c.List(ctx, list, client.InNamespace(kilnNS), client.MatchingLabels{trigger.LabelPool: pool}); err != nil {
		c.t.Fatal(err)
	}
	return list.Items
}

// waitRun waits for a run of pool that match accepts.
func (c *cluster) waitRun(ctx context.Context, pool string, match func(*pipelinev1.PipelineRun) bool, timeout time.Duration) *pipelinev1.PipelineRun {
	c.t.Helper()
	var found *pipelinev1.PipelineRun
	c.poll(ctx, timeout, fmt.Sprintf("a new PipelineRun for pool %s", pool), func() bool {
		for _, r := range c.listRuns(ctx, pool) {
			if match(&r) {
				found = r.DeepCopy()
				return true
			}
		}
		return false
	})
	return found
}

// waitDone waits for r to finish and fails the test, with the failed
// TaskRuns' messages and step logs, unless it succeeded.
func (c *cluster) waitDone(ctx context.Context, r *pipelinev1.PipelineRun, timeout time.Duration) *pipelinev1.PipelineRun {
	c.t.Helper()
	cur := &pipelinev1.PipelineRun{}
	c.poll(ctx, timeout, "PipelineRun "+r.Name+" to finish", func() bool {
		if err := c.c.Get(ctx, client.ObjectKeyFromObject(r), cur); err != nil {
			c.t.Fatal(err)
		}
		return cur.IsDone()
	})
	if !cur.Status.GetCondition("Succeeded").IsTrue() {
		c.t.Fatalf("PipelineRun %s did not succeed: %s\n%s", cur.Name, cur.Status.GetCondition("Succeeded").GetMessage(), c.failedTasks(ctx, cur))
	}
	return cur
}

func (c *cluster) poll(ctx context.Context, timeout time.Duration, what string, done func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for !done() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %s waiting for %s\n%s", timeout, what, c.describe(ctx))
		}
		select {
		case <-ctx.Done():
			c.t.Fatal(ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// assertRun checks a succeeded node-image run against the cluster and the
// registry: its TaskRuns, its results, kiln's signature and Chains', and
// the pool's osImageURL MachineConfig, rolled out by mcosim.
func (c *cluster) assertRun(ctx context.Context, r *pipelinev1.PipelineRun) {
	c.t.Helper()
	pool := r.Labels[trigger.LabelPool]
	results := map[string]string{}
	for _, res := range r.Status.Results {
		results[res.Name] = res.Value.StringVal
	}
	url, digest := results["IMAGE_URL"], results["IMAGE_DIGEST"]
	if url != c.reg.Host+"/kiln/node-image-"+pool || !strings.HasPrefix(digest, "sha256:") {
		c.t.Errorf("run %s: IMAGE_URL %q, IMAGE_DIGEST %q", r.Name, url, digest)
		return
	}
	if results["ROLLOUT_STATE"] != rollout.StateSucceeded {
		c.t.Errorf("run %s: ROLLOUT_STATE %q", r.Name, results["ROLLOUT_STATE"])
	}
	image := url + "@" + digest
	c.assertTaskRuns(ctx, r, pool)
	v, err := sign.LoadVerifier(filepath.Join(c.keys.Cosign, "cosign.pub"))
	if err != nil {
		c.t.Fatal(err)
	}
	if err := sign.CosignVerify(ctx, registry.Remote{Insecure: []string{c.reg.Host}}, image, v); err != nil {
		c.t.Errorf("run %s: verifying %s with the cosign public key: %v", r.Name, image, err)
	}
	c.assertChains(ctx, r)
	mc := &mcfgv1.MachineConfig{}
	if err := c.c.Get(ctx, client.ObjectKey{Name: rollout.MachineConfigName(pool)}, mc); err != nil {
		c.t.Errorf("run %s: kiln's MachineConfig: %v", r.Name, err)
	} else if !strings.HasSuffix(mc.Spec.OSImageURL, "@"+digest) {
		c.t.Errorf("run %s: %s osImageURL %q, want the image %s", r.Name, mc.Name, mc.Spec.OSImageURL, digest)
	}
	c.assertPoolUpdated(ctx, pool, digest)
}

// assertTaskRuns: every task ran in a pod that succeeded, except the kmod
// tasks on pools without a ModuleDay0 and, for an image image-build
// reused, image-sign and verify, which Tekton skips by their when; extra
// names the tasks a pipeline has before kiln's stages.
func (c *cluster) assertTaskRuns(ctx context.Context, r *pipelinev1.PipelineRun, pool string, extra ...string) {
	c.t.Helper()
	want := append([]string{"render", "image-build", "image-sign", "verify", "rollout", "report"}, extra...)
	if pool == "infra" {
		want = append(want, "kmod-build", "kmod-sign")
	}
	if pool == "worker" {
		want = append(want, "bootimages")
	}
	c.assertTaskRunsFailing(ctx, r, want, "")
}

// assertTaskRunsFailing: r ran exactly the tasks want, each in the steps
// image kiln-config names, and each succeeded but failed (if any), whose
// TaskRun must have failed.
func (c *cluster) assertTaskRunsFailing(ctx context.Context, r *pipelinev1.PipelineRun, want []string, failed string) {
	c.t.Helper()
	var got []string
	reused := false
	for _, ref := range r.Status.ChildReferences {
		tr := &pipelinev1.TaskRun{}
		if err := c.c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: ref.Name}, tr); err != nil {
			c.t.Fatal(err)
		}
		if ref.PipelineTaskName == "image-build" {
			for _, res := range tr.Status.Results {
				reused = reused || (res.Name == "REUSED" && res.Value.StringVal == "true")
			}
		}
		if ref.PipelineTaskName == failed {
			if !tr.Status.GetCondition("Succeeded").IsFalse() {
				c.t.Errorf("TaskRun %s did not fail: %v", tr.Name, tr.Status.GetCondition("Succeeded"))
			}
			c.assertStepsImage(ctx, tr)
			got = append(got, ref.PipelineTaskName)
			continue
		}
		if !tr.Status.GetCondition("Succeeded").IsTrue() {
			c.t.Errorf("TaskRun %s: %s", tr.Name, tr.Status.GetCondition("Succeeded").GetMessage())
		}
		c.assertPodSucceeded(ctx, tr)
		// kiln-config's kiln-image param overrides the Tasks' pinned
		// default: the release image is never pulled here.
		c.assertStepsImage(ctx, tr)
		got = append(got, ref.PipelineTaskName)
	}
	if reused {
		// An image image-build proved is not signed again, and verify is
		// left to rollout when rollout follows.
		rolls := slices.Contains(want, "rollout")
		want = slices.DeleteFunc(slices.Clone(want), func(n string) bool {
			return n == "image-sign" || (n == "verify" && rolls)
		})
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		c.t.Errorf("run %s ran tasks %v, want %v", r.Name, got, want)
	}
}

// assertPodSucceeded: the TaskRun's pod ran on the real node and every
// container in it exited 0. Its phase can trail the containers' states (the
// kubelet writes it on a later status sync), so the states are what count.
func (c *cluster) assertPodSucceeded(ctx context.Context, tr *pipelinev1.TaskRun) {
	c.t.Helper()
	pod := &corev1.Pod{}
	for range 30 {
		if err := c.c.Get(ctx, client.ObjectKey{Namespace: tr.Namespace, Name: tr.Status.PodName}, pod); err != nil {
			c.t.Errorf("TaskRun %s: its pod %q: %v", tr.Name, tr.Status.PodName, err)
			return
		}
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || allExited(pod) {
			break
		}
		time.Sleep(time.Second)
	}
	if pod.Status.Phase == corev1.PodFailed || !allExited(pod) || pod.Spec.NodeName != c.node.Name() {
		c.t.Errorf("TaskRun %s: pod %s phase %s on node %q, containers %+v; want every container exited 0 on %s",
			tr.Name, pod.Name, pod.Status.Phase, pod.Spec.NodeName, pod.Status.ContainerStatuses, c.node.Name())
	}
	if err := keysIsolated(pod); err != nil {
		c.t.Errorf("TaskRun %s: %v", tr.Name, err)
	}
}

// keysIsolated checks the pod Tekton made, as the kubelet ran it: no
// container of a step that runs user code (buildah) mounts a key
// workspace, and in a kmod-build pod the attest step does mount the
// cosign key (the step-level workspace reached the pod).
func keysIsolated(pod *corev1.Pod) error {
	keyMounts := func(ctr corev1.Container) []string {
		var out []string
		for _, m := range ctr.VolumeMounts {
			for _, w := range pipeline.KeyWorkspaces {
				if m.MountPath == "/workspace/"+w {
					out = append(out, m.MountPath)
				}
			}
		}
		return out
	}
	var problems []string
	kmodBuild := false
	for _, ctr := range pod.Spec.Containers {
		step := strings.TrimPrefix(ctr.Name, "step-")
		if slices.Contains(pipeline.UserCodeSubcommands, step) {
			kmodBuild = kmodBuild || step == "kmod-build"
			if m := keyMounts(ctr); len(m) > 0 {
				problems = append(problems, fmt.Sprintf("container %s runs user code and mounts %v", ctr.Name, m))
			}
		}
	}
	if kmodBuild && !slices.ContainsFunc(pod.Spec.Containers, func(ctr corev1.Container) bool {
		return ctr.Name == "step-attest" && slices.Contains(keyMounts(ctr), "/workspace/cosign-key")
	}) {
		problems = append(problems, "the kmod-build pod's step-attest does not mount /workspace/cosign-key")
	}
	if len(problems) > 0 {
		return fmt.Errorf("pod %s: %s", pod.Name, strings.Join(problems, "; "))
	}
	return nil
}

func allExited(pod *corev1.Pod) bool {
	if len(pod.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, s := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			return false
		}
	}
	return true
}

// assertPoolUpdated: mcosim rolled every node of the pool onto the image.
func (c *cluster) assertPoolUpdated(ctx context.Context, pool, digest string) {
	c.t.Helper()
	nodes := &corev1.NodeList{}
	if err := c.c.List(ctx, nodes, client.HasLabels{"node-role.kubernetes.io/" + pool}); err != nil {
		c.t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if img := n.Annotations["machineconfiguration.openshift.io/currentImage"]; !strings.HasSuffix(img, "@"+digest) {
			c.t.Errorf("node %s of pool %s runs image %q, want %s", n.Name, pool, img, digest)
		}
	}
}

func (c *cluster) assertRunCount(ctx context.Context, want map[string]int) {
	c.t.Helper()
	for pool, n := range want {
		if got := len(c.listRuns(ctx, pool)); got != n {
			c.t.Errorf("pool %s has %d PipelineRuns, want %d", pool, got, n)
		}
	}
}

// editMachineConfig changes one file's contents in an MC, as a user's
// GitOps commit would.
func (c *cluster) editMachineConfig(ctx context.Context, name string) {
	mc := &mcfgv1.MachineConfig{}
	if err := c.c.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		c.t.Fatal(err)
	}
	if mc.Annotations == nil {
		mc.Annotations = map[string]string{}
	}
	raw := string(mc.Spec.Config.Raw)
	edited := strings.Replace(raw, `"files":[`, `"files":[{"path":"/etc/kiln-e2e-edit","mode":420,"contents":{"source":"data:,edited"}},`, 1)
	if edited == raw {
		c.t.Fatalf("MachineConfig %s has no storage.files to edit: %s", name, raw)
	}
	mc.Spec.Config.Raw = []byte(edited)
	if err := c.c.Update(ctx, mc); err != nil {
		c.t.Fatal(err)
	}
}

// changePayload pushes a new base OS image (one more label, so a new
// digest) and points the payload's ConfigMap at it, as an upgrade does.
func (c *cluster) changePayload(ctx context.Context) {
	next, err := examples.PushNextBase(ctx, c.reg.Host, "io.kiln.e2e.payload", "2")
	if err != nil {
		c.t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.c.Get(ctx, client.ObjectKey{Namespace: payload.Namespace, Name: payload.OSImageURLMap}, cm); err != nil {
		c.t.Fatal(err)
	}
	cm.Data["baseOSContainerImage"] = next
	if err := c.c.Update(ctx, cm); err != nil {
		c.t.Fatal(err)
	}
}
