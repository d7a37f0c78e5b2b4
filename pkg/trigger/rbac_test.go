package trigger

import (
	"bytes"
	"context"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/moduleday0"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/test/install"
)

// TestTriggerRBAC runs the trigger, leader election on, as the
// kiln-trigger ServiceAccount with exactly the RBAC config/ installs,
// through a proxy that records every request: nothing it does is refused,
// and every verb config/ grants it is used (or listed below, with why).
func TestTriggerRBAC(t *testing.T) {
	h := newHarness(t)
	objs, err := install.Render(install.ConfigDir())
	if err != nil {
		t.Fatal(err)
	}
	h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-machine-api"}}) // the bootimages Roles'
	// The cluster's registries (the trigger's openshift-config Role).
	h.clusterRegistries(selfSigned(t))
	rbac := install.Select(objs, "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
	if err := install.Apply(context.Background(), h.c, rbac); err != nil {
		t.Fatal(err)
	}
	grants, err := install.Grants(objs, ns, "kiln-trigger")
	if err != nil {
		t.Fatal(err)
	}
	proxy := install.StartProxy(t, h.kube.Config, "system:serviceaccount:kiln:kiln-trigger")
	defer func() {
		if t.Failed() {
			t.Logf("refused requests: %v\nrequests: %s", install.Forbidden(proxy.Requests()), proxy.Summary())
		}
	}()

	managed := machineConfig("50-infra-kmods", "infra", "k=1")
	managed.Labels[moduleday0.KMMManagedLabel] = "true"
	managed.Spec.OSImageURL = "registry.example/kmods@sha256:" + fpA + fpA
	h.create(pool("worker", true), pool("infra", true), machineConfig("00-worker", "worker", "a=1"), managed)
	h.setRetention("schedule: 10m\n") // the scheduled prune's TaskRun
	mgr, err := NewManager(proxy.Config(), Options{Namespace: ns, MetricsAddr: "0", ProbeAddr: "0", LeaderElect: true,
		Settle: 200 * time.Millisecond, MaxSettle: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()

	eventually(t, wait, "the scheduled prune", func() bool { return len(h.pruneRuns()) == 1 })
	// Runs, a cancel, and the sync's ModuleDay0 (which changes infra's fingerprint: a second infra run).
	eventually(t, wait, "runs for both pools", func() bool { return len(h.runs("worker")) == 1 && len(h.runs("infra")) >= 1 })
	eventually(t, wait, "the sync's ModuleDay0", func() bool {
		var l kmmv1beta1.ModuleDay0List
		_ = h.c.List(context.Background(), &l)
		return len(l.Items) == 1
	})
	h.setKarg("00-worker", "a=2")
	eventually(t, wait, "the cancel of worker's first run", func() bool {
		rs := h.runs("worker")
		return len(rs) == 2 && (rs[0].Spec.Status == pipelinev1.PipelineRunSpecStatusCancelledRunFinally ||
			rs[1].Spec.Status == pipelinev1.PipelineRunSpecStatusCancelledRunFinally)
	})
	// The undo re-runs the cancelled fingerprint: a run deleted and made.
	h.setKarg("00-worker", "a=1")
	eventually(t, wait, "the re-made first run", func() bool {
		rs := h.live("worker")
		return len(rs) == 1 && rs[0].Annotations[AnnotSupersededBy] == ""
	})
	// A revert deletes kiln's MC; the label's removal deletes the ModuleDay0.
	h.create(&mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: rollout.MachineConfigName("infra"),
		Labels: map[string]string{rollout.ManagedLabel: "true", "machineconfiguration.openshift.io/role": "infra"}}})
	h.update(&mcfgv1.MachineConfigPool{}, "infra", "", func(o client.Object) { o.SetLabels(nil) })
	h.update(&mcfgv1.MachineConfig{}, managed.Name, "", func(o client.Object) {
		l := o.GetLabels()
		delete(l, moduleday0.KMMManagedLabel)
		o.SetLabels(l)
	})
	eventually(t, wait, "the revert and the ModuleDay0's deletion", func() bool {
		var l kmmv1beta1.ModuleDay0List
		_ = h.c.List(context.Background(), &l)
		err := h.c.Get(context.Background(), client.ObjectKey{Name: rollout.MachineConfigName("infra")}, &mcfgv1.MachineConfig{})
		return len(l.Items) == 0 && err != nil
	})
	// The registries copies follow their sources: an update of each, and
	// the pull secret's copy deleted with its source.
	h.update(&corev1.Secret{}, PullSecretName, OpenShiftConfigNamespace, func(o client.Object) {
		o.(*corev1.Secret).Data[corev1.DockerConfigJsonKey] = dockerConfig("two")
	})
	h.update(&corev1.ConfigMap{}, RegistriesConfigMap, ns, func(o client.Object) {
		o.(*corev1.ConfigMap).Data = map[string]string{"edited": "by hand"}
	})
	eventually(t, wait, "the copies' updates", func() bool {
		var cm corev1.ConfigMap
		cp := h.pullSecretCopy()
		err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: RegistriesConfigMap}, &cm)
		return err == nil && cm.Data["edited"] == "" && cp != nil && bytes.Equal(cp.Data[corev1.DockerConfigJsonKey], dockerConfig("two"))
	})
	if err := h.c.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: PullSecretName, Namespace: OpenShiftConfigNamespace}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "the pull secret copy's deletion", func() bool { return h.pullSecretCopy() == nil })
	time.Sleep(time.Second) // the events of the last steps reach the apiserver

	reqs := proxy.Requests()
	if f := install.Forbidden(reqs); len(f) > 0 {
		t.Fatalf("requests the apiserver refused kiln-trigger:\n%v", f)
	}
	allowed := map[string]string{
		// The sync writes an MC's osImageURL and a ModuleDay0's status only
		// once the kmod image exists in a registry; that path is
		// pkg/kmod's TestSync, here no registry holds it.
		"patch machineconfigs.machineconfiguration.openshift.io ns=":   "sync: apply osImageURL (pkg/kmod TestSync)",
		"update moduleday0s.kmm.sigs.x-k8s.io ns=kiln":                 "sync: spec updates of an existing ModuleDay0",
		"patch moduleday0s.kmm.sigs.x-k8s.io ns=kiln":                  "sync: spec updates of an existing ModuleDay0",
		"update moduleday0s/status.kmm.sigs.x-k8s.io ns=kiln":          "sync: conditions (pkg/kmod TestSync)",
		"get machineconfigs.machineconfiguration.openshift.io ns=":     "informer reads; gets go to the cache",
		"get machineconfigpools.machineconfiguration.openshift.io ns=": "informer reads; gets go to the cache",
		"get moduleday0s.kmm.sigs.x-k8s.io ns=":                        "informer reads; gets go to the cache",
		"get nodes ns=":                                                "informer reads; gets go to the cache",
		"get clusterversions.config.openshift.io ns=":                  "informer reads; gets go to the cache",
		"get machineconfigurations.operator.openshift.io ns=":          "informer reads; gets go to the cache",
		"get configmaps ns=kiln":                                       "informer reads; gets go to the cache",
		"get configmaps ns=openshift-machine-config-operator":          "informer reads; gets go to the cache",
		"get pipelines.tekton.dev ns=kiln":                             "informer reads; gets go to the cache",
		"get pipelineruns.tekton.dev ns=kiln":                          "bootimages: the run-coming check",
		"get taskruns.tekton.dev ns=kiln":                              "prune: a run's image-build and rollout TaskRuns (TestScheduledPruneWaitsForARunBetweenImageBuildAndRollout); no run here has TaskRuns",
		"patch events ns=kiln":                                         "event aggregation of repeated events",
		"patch events ns=default":                                      "event aggregation of repeated events",
		// Upgrade-ahead staging needs a ready run's node image; its test
		// runs the trigger as kiln-trigger with this RBAC too.
		"create pinnedimagesets.machineconfiguration.openshift.io ns=":   "staging: TestUpgradeAheadStagesReadyImagesAsPinnedImageSets",
		"delete pinnedimagesets.machineconfiguration.openshift.io ns=":   "staging: TestUpgradeAheadStagesReadyImagesAsPinnedImageSets",
		"patch machineconfigpools.machineconfiguration.openshift.io ns=": "staging: TestUpgradeAheadStagesReadyImagesAsPinnedImageSets",
	}
	for _, g := range install.Unused(grants, reqs, allowed) {
		t.Errorf("config/ grants kiln-trigger %s (%s), which the trigger never used", g.Key(), g.Source)
	}
}
