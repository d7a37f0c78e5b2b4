package env_test

import (
	"context"
	"strings"
	"testing"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/test/env"
)

// TestNodeRunsTaskRun starts the whole single-node cluster (apiserver on
// the host IP, containerd, kubelet, scheduler, controller-manager, Tekton's
// controller) and runs a TaskRun whose script step runs in the kiln-steps
// image: Tekton's init containers, the shell image, the entrypoint, the
// pod network to the apiserver and results all have to work for it to
// succeed with the expected result.
func TestNodeRunsTaskRun(t *testing.T) {
	kube := env.StartKubeWith(t, env.KubeOptions{Address: env.HostIP(t)})
	node := env.StartNode(t, kube, env.NodeOptions{})
	env.StartTekton(t, kube, node)
	tar, ref := env.StepsImage(t)
	node.ImportImage(t, tar)

	host, port := kube.HostPort()
	tr := &tektonv1.TaskRun{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: "default"},
		Spec: tektonv1.TaskRunSpec{TaskSpec: &tektonv1.TaskSpec{
			Results: []tektonv1.TaskResult{{Name: "buildah"}, {Name: "apiserver"}},
			Steps: []tektonv1.Step{{
				Name:  "probe",
				Image: ref,
				// The service account token is mounted, and the apiserver
				// answers /version to it over the pod network.
				Script: `#!/bin/bash
set -euo pipefail
buildah --version | cut -d' ' -f1-2 | tr -d '\n' > $(results.buildah.path)
kiln-steps --help >/dev/null 2>&1 || true
exec 3<>/dev/tcp/` + host + `/` + port + ` && echo reachable | tr -d '\n' > $(results.apiserver.path)
`,
			}},
		}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := kube.Client.Create(ctx, tr); err != nil {
		t.Fatal(err)
	}
	for {
		if err := kube.Client.Get(ctx, client.ObjectKeyFromObject(tr), tr); err != nil {
			t.Fatal(err)
		}
		if c := tr.Status.GetCondition(apis.ConditionSucceeded); c != nil && !c.IsUnknown() {
			if !c.IsTrue() {
				t.Fatalf("TaskRun failed: %s: %s\n%s", c.Reason, c.Message, node.PodLogs(ctx, "default", tr.Status.PodName))
			}
			break
		}
		select {
		case <-ctx.Done():
			pod := &corev1.Pod{}
			_ = kube.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: tr.Status.PodName}, pod)
			t.Fatalf("TaskRun did not finish: %+v\npod: %+v", tr.Status, pod.Status)
		case <-time.After(time.Second):
		}
	}
	got := map[string]string{}
	for _, r := range tr.Status.Results {
		got[r.Name] = r.Value.StringVal
	}
	if !strings.HasPrefix(got["buildah"], "buildah version") || got["apiserver"] != "reachable" {
		t.Errorf("results = %v, want buildah's version and the apiserver reachable", got)
	}
	if tr.Status.PodName == "" {
		t.Fatal("no pod recorded")
	}
	// As for a pulled image, the step's imageID is a repo digest: Tekton
	// Chains records the step images from it.
	if len(tr.Status.Steps) != 1 || !strings.HasPrefix(tr.Status.Steps[0].ImageID, "kiln.local/kiln-steps@sha256:") {
		t.Errorf("step statuses %+v, want the imageID kiln.local/kiln-steps@sha256:…", tr.Status.Steps)
	}
	pod := &corev1.Pod{}
	if err := kube.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: tr.Status.PodName}, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeName != node.Name() {
		t.Errorf("pod ran on %q, want the node %q", pod.Spec.NodeName, node.Name())
	}
}
