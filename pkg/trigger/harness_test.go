package trigger

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/pipeline"
	"github.com/kiln-dev/kiln/test/env"
)

const ns = "kiln"

func init() {
	// The manager logs through controller-runtime's root logger; tests
	// read events and objects instead.
	ctrllog.SetLogger(logr.Discard())
}

// harness is a real apiserver with kiln's Pipelines, kiln-config and a
// payload installed, and the trigger started in-process on demand.
type harness struct {
	t    testing.TB
	kube *env.Kube
	c    client.Client
	reg  *env.Registry // holds sample release images; started on first use
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	k := env.StartKube(t)
	h := &harness{t: t, kube: k, c: k.Client}
	h.create(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: payload.Namespace}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigName, Namespace: ns}, Data: map[string]string{
			"repository": "registry.example/os-{pool}",
			"params":     "kiln-image: ghcr.io/kiln-dev/kiln-steps:v0.1.0\n",
			"workspaces": "- name: work\n  volumeClaimTemplate:\n    spec:\n      accessModes: [ReadWriteOnce]\n      resources: {requests: {storage: 1Gi}}\n" +
				"- name: signing-key\n  secret: {secretName: kiln-cosign}\n- name: public-key\n  secret: {secretName: kiln-cosign-pub}\n",
		}},
		osImageURLMap("1"),
	)
	for _, f := range []string{"node-image.yaml", "bootimages.yaml"} {
		p, err := pipeline.LoadPipeline(context.Background(), filepath.Join(env.RepoRoot(), "pipelines", f))
		if err != nil {
			t.Fatal(err)
		}
		p.Namespace = ns
		h.create(p)
	}
	return h
}

// osImageURLMap is the payload ConfigMap; gen changes the base image.
func osImageURLMap(gen string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: payload.OSImageURLMap, Namespace: payload.Namespace}, Data: map[string]string{
		"baseOSContainerImage":           fmt.Sprintf("quay.io/openshift/os@sha256:%064s", gen),
		"baseOSExtensionsContainerImage": fmt.Sprintf("quay.io/openshift/ext@sha256:%064s", gen),
		"releaseVersion":                 "4.18." + gen,
	}}
}

func (h *harness) create(objs ...client.Object) {
	h.t.Helper()
	for _, o := range objs {
		if err := h.c.Create(context.Background(), o); err != nil {
			h.t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// start runs the trigger until the returned stop is called (or the test
// ends); stop waits for the manager to return.
func (h *harness) start(settle time.Duration) (stop func()) {
	h.t.Helper()
	mgr, err := NewManager(h.kube.Config, Options{
		Namespace: ns, MetricsAddr: "0", ProbeAddr: "0", Settle: settle, MaxSettle: 10 * settle,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			h.t.Errorf("trigger manager: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	h.t.Cleanup(stop)
	return stop
}

func pool(name string, enabled bool, lbls ...string) *mcfgv1.MachineConfigPool {
	p := &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: mcrender.RoleLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"worker", name},
			}}},
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}},
		},
	}
	if name == "master" {
		p.Spec.MachineConfigSelector.MatchExpressions[0].Values = []string{"master"}
	}
	if enabled {
		p.Labels[LabelEnabled] = "true"
	}
	for i := 0; i+1 < len(lbls); i += 2 {
		p.Labels[lbls[i]] = lbls[i+1]
	}
	return p
}

func machineConfig(name, role, karg string) *mcfgv1.MachineConfig {
	return &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{mcrender.RoleLabel: role}},
		Spec: mcfgv1.MachineConfigSpec{
			Config:          runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)},
			KernelArguments: []string{karg},
		},
	}
}

// setKarg edits an MC's kernel argument, retrying on conflicts.
func (h *harness) setKarg(name, karg string) {
	h.t.Helper()
	h.update(&mcfgv1.MachineConfig{}, name, "", func(o client.Object) { o.(*mcfgv1.MachineConfig).Spec.KernelArguments = []string{karg} })
}

func (h *harness) update(obj client.Object, name, namespace string, mutate func(client.Object)) {
	h.t.Helper()
	for i := 0; ; i++ {
		if err := h.c.Get(context.Background(), client.ObjectKey{Name: name, Namespace: namespace}, obj); err != nil {
			h.t.Fatalf("reading %s: %v", name, err)
		}
		mutate(obj)
		err := h.c.Update(context.Background(), obj)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || i > 10 {
			h.t.Fatalf("updating %s: %v", name, err)
		}
	}
}

// runs lists the trigger's runs of pool ("" for all of kiln's runs).
func (h *harness) runs(pool string) []*pipelinev1.PipelineRun {
	h.t.Helper()
	sel := client.MatchingLabels{LabelRunsManagedBy: ManagedBy}
	if pool != "" {
		sel[LabelPool] = pool
	}
	var list pipelinev1.PipelineRunList
	if err := h.c.List(context.Background(), &list, client.InNamespace(ns), sel); err != nil {
		h.t.Fatal(err)
	}
	out := make([]*pipelinev1.PipelineRun, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	newestFirst(out)
	return out
}

// live are pool's runs that are neither done nor told to stop.
func (h *harness) live(pool string) []*pipelinev1.PipelineRun {
	var out []*pipelinev1.PipelineRun
	for _, r := range h.runs(pool) {
		if st := stateOf(r); st != runDone {
			out = append(out, r)
		}
	}
	return out
}

// progress plays Tekton's part: it moves a run to a pipeline task, or
// finishes it.
func (h *harness) progress(name string, tasks []string, done corev1.ConditionStatus) {
	h.t.Helper()
	for i := 0; ; i++ {
		err := h.tryProgress(name, tasks, done)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || i > 10 {
			h.t.Fatalf("updating status of PipelineRun %s: %v", name, err)
		}
	}
}

func (h *harness) tryProgress(name string, tasks []string, done corev1.ConditionStatus) error {
	var pr pipelinev1.PipelineRun
	if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &pr); err != nil {
		return err
	}
	pr.Status.ChildReferences = nil
	for _, t := range tasks {
		pr.Status.ChildReferences = append(pr.Status.ChildReferences, pipelinev1.ChildStatusReference{
			TypeMeta: runtime.TypeMeta{APIVersion: "tekton.dev/v1", Kind: "TaskRun"}, Name: name + "-" + t, PipelineTaskName: t,
		})
	}
	if done != "" {
		pr.Status.Status = duckv1.Status{Conditions: duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: done}}}
	}
	return h.c.Status().Update(context.Background(), &pr)
}

func eventually(t testing.TB, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// consistently fails when bad turns true within d.
func consistently(t testing.TB, d time.Duration, what string, bad func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if bad() {
			t.Fatalf("%s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hasEvent reports whether an event with reason on object name exists,
// returning its message.
// event finds the event of reason on the object name. Events are written
// asynchronously by the recorder's broadcaster, so it polls briefly.
func (h *harness) event(name, reason string) (string, bool) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var evs corev1.EventList
		if err := h.c.List(context.Background(), &evs); err != nil {
			h.t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason {
				return e.Message, true
			}
		}
		if time.Now().After(deadline) {
			return "", false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func param(pr *pipelinev1.PipelineRun, name string) string {
	for _, p := range pr.Spec.Params {
		if p.Name == name {
			return p.Value.StringVal
		}
	}
	return ""
}
