package release_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/release"
	"github.com/kiln-dev/kiln/pkg/trigger"
	"github.com/kiln-dev/kiln/test/env"
)

func published(tag, digit string) *release.Published {
	return &release.Published{Tag: tag,
		Trigger: release.Pushed{Image: "registry.example:5000/me/kiln-trigger@sha256:" + strings.Repeat(digit, 64)},
		Steps:   release.Pushed{Image: "registry.example:5000/me/kiln-steps@sha256:" + strings.Repeat(digit, 64)},
	}
}

// olderRelease is config/ plus what an older release had and this one
// dropped: a Task and a ClusterRole.
const olderOnly = `apiVersion: tekton.dev/v1
kind: Task
metadata:
  name: kiln-legacy-verify
  namespace: kiln
spec:
  steps:
  - name: verify
    image: ghcr.io/kiln-dev/kiln-steps:v0.1.0
    command: [kiln-steps, verify]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: kiln-legacy-viewer
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get]
`

func olderConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, filepath.Join(env.RepoRoot(), "config"))
	if err != nil {
		t.Fatal(err)
	}
	k := "resources:\n- " + rel + "\n- older.yaml\n"
	for f, b := range map[string]string{"kustomization.yaml": k, "older.yaml": olderOnly} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// render writes the overlay of config pinned to p and renders it.
func render(t *testing.T, config string, p *release.Published) []*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	if err := release.WriteOverlay(dir, config, p, nil); err != nil {
		t.Fatal(err)
	}
	objs, err := release.Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// foreignNamespaces creates the namespaces config/'s Roles live in besides
// kiln's own, as an OpenShift cluster has them.
func foreignNamespaces(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	seen := map[string]bool{"kiln": true, "default": true}
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" && !seen[ns] {
			seen[ns] = true
			if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func pipelineRun(name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("tekton.dev/v1")
	u.SetKind("PipelineRun")
	u.SetNamespace("kiln")
	u.SetName(name)
	u.SetLabels(labels)
	_ = unstructured.SetNestedField(u.Object, "kiln-node-image", "spec", "pipelineRef", "name")
	return u
}

func get(t *testing.T, c client.Client, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, u)
}

// An upgrade: release A (with a Task and a ClusterRole B no longer has)
// is installed, an older trigger's runs and a runtime object exist, then
// release B is installed. B's digests are pinned, A-only objects are
// pruned, nothing kiln made at runtime is touched, the older trigger's
// run is kept and given today's labels, and a run of today's trigger is
// left as it was.
func TestInstallUpgradePrunesDroppedObjectsAndKeepsOlderRuns(t *testing.T) {
	kube := env.StartKube(t)
	c := kube.Client
	ctx := t.Context()
	a, b := published("v0.1.0", "a"), published("v0.2.0", "b")
	objsA := render(t, olderConfig(t), a)
	foreignNamespaces(t, c, objsA)
	var log bytes.Buffer
	if _, err := release.Install(ctx, c, objsA, &log); err != nil {
		t.Fatalf("installing release A: %v", err)
	}
	task := schema.GroupVersionKind{Group: "tekton.dev", Version: "v1", Kind: "Task"}
	role := schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	if _, err := get(t, c, task, "kiln", "kiln-legacy-verify"); err != nil {
		t.Fatalf("release A's own Task: %v", err)
	}

	// What kiln made while A ran: an older trigger's run in rollout, a run
	// of today's trigger, the registries' copy.
	legacy := pipelineRun("worker-legacy", map[string]string{"app.kubernetes.io/managed-by": "kiln-trigger",
		"kiln.dev/pool": "worker", "kiln.dev/fingerprint": "f1", "kiln.dev/pipeline": "node-image", "kiln.dev/trigger": "machineconfig"})
	current := pipelineRun("infra-current", map[string]string{trigger.LabelRunsManagedBy: trigger.ManagedBy,
		trigger.LabelPool: "infra", trigger.LabelFingerprint: "f2", trigger.LabelPipeline: "node-image"})
	runtimeCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kiln-registries", Namespace: "kiln",
		Labels: map[string]string{trigger.LabelManagedBy: trigger.ManagedBy, "app.kubernetes.io/part-of": "kiln"}}}
	for _, o := range []client.Object{legacy, current, runtimeCM} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	objsB := render(t, filepath.Join(env.RepoRoot(), "config"), b)
	res, err := release.Install(ctx, c, objsB, &log)
	if err != nil {
		t.Fatalf("installing release B: %v", err)
	}
	var pruned []string
	for _, r := range res.Pruned {
		pruned = append(pruned, r.String())
	}
	sort.Strings(pruned)
	if diff := cmp.Diff([]string{"ClusterRole.rbac.authorization.k8s.io kiln-legacy-viewer", "Task.tekton.dev kiln/kiln-legacy-verify"}, pruned); diff != "" {
		t.Errorf("pruned (-want +got):\n%s\nlog:\n%s", diff, log.String())
	}
	for _, x := range []struct {
		gvk      schema.GroupVersionKind
		ns, name string
	}{{task, "kiln", "kiln-legacy-verify"}, {role, "", "kiln-legacy-viewer"}} {
		if _, err := get(t, c, x.gvk, x.ns, x.name); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s after the upgrade: %v, want not found", x.gvk.Kind, x.name, err)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(runtimeCM), &corev1.ConfigMap{}); err != nil {
		t.Errorf("the trigger's runtime ConfigMap after the upgrade: %v", err)
	}

	// B's digests are what runs now.
	dep, err := get(t, c, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "kiln", release.TriggerName)
	if err != nil {
		t.Fatal(err)
	}
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if got := cs[0].(map[string]any)["image"]; got != b.Trigger.Image {
		t.Errorf("trigger image after the upgrade %v, want %s", got, b.Trigger.Image)
	}
	pipe, err := get(t, c, schema.GroupVersionKind{Group: "tekton.dev", Version: "v1", Kind: "Pipeline"}, "kiln", "kiln-node-image")
	if err != nil {
		t.Fatal(err)
	}
	params, _, _ := unstructured.NestedSlice(pipe.Object, "spec", "params")
	for _, p := range params {
		if m := p.(map[string]any); m["name"] == "kiln-image" && m["default"] != b.Steps.Image {
			t.Errorf("kiln-node-image's kiln-image default %v, want %s", m["default"], b.Steps.Image)
		}
	}

	// The older trigger's run is kept, under today's labels; today's is
	// untouched.
	if diff := cmp.Diff([]string{"worker-legacy"}, res.Relabeled); diff != "" {
		t.Errorf("relabeled runs (-want +got):\n%s", diff)
	}
	runGVK := schema.GroupVersionKind{Group: "tekton.dev", Version: "v1", Kind: "PipelineRun"}
	wantLabels := map[string]map[string]string{
		"worker-legacy": {trigger.LabelRunsManagedBy: trigger.ManagedBy, trigger.LabelPool: "worker", trigger.LabelFingerprint: "f1",
			trigger.LabelPipeline: "node-image", trigger.LabelTrigger: "machineconfig"},
		"infra-current": current.GetLabels(),
	}
	for n, want := range wantLabels {
		pr, err := get(t, c, runGVK, "kiln", n)
		if err != nil {
			t.Fatalf("run %s after the upgrade: %v", n, err)
		}
		if diff := cmp.Diff(want, pr.GetLabels()); diff != "" {
			t.Errorf("run %s labels (-want +got):\n%s", n, diff)
		}
	}

	// Installing B again changes nothing and prunes nothing.
	again, err := release.Install(ctx, c, objsB, &log)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Pruned) != 0 || len(again.Relabeled) != 0 || len(again.Applied) != len(res.Applied) {
		t.Errorf("second install of B: pruned %v, relabeled %v, applied %d (first: %d)", again.Pruned, again.Relabeled, len(again.Applied), len(res.Applied))
	}
}

// pkg/release relabels runs to the keys today's trigger selects them by.
func TestRunLabelsAreTheTriggers(t *testing.T) {
	got := []string{release.LabelRunsManagedBy, release.LabelFingerprint, release.LabelPipeline, release.LabelGitRevision,
		release.ManagedBy, release.LegacyManagedBy}
	want := []string{trigger.LabelRunsManagedBy, trigger.LabelFingerprint, trigger.LabelPipeline, trigger.LabelGitRevision,
		trigger.ManagedBy, trigger.LabelManagedBy}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run labels (-pkg/trigger +pkg/release):\n%s", diff)
	}
}
