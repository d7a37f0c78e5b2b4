package e2e

import (
	"context"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testReproduce runs the kiln-reproduce Task, as installed from config/,
// on the image a node-image run built and signed (infra's: the buildah
// path on a signed kmod base), with kiln's public key only: the rebuild
// from the attestation, its kmod base included (--deep), must give the
// same digests, REPRODUCED=true.
func (c *cluster) testReproduce(ctx context.Context, t *testing.T, run *pipelinev1.PipelineRun) {
	prevT := c.t
	c.t = t
	defer func() { c.t = prevT }()

	results := map[string]string{}
	for _, res := range run.Status.Results {
		results[res.Name] = res.Value.StringVal
	}
	image := results["IMAGE_URL"] + "@" + results["IMAGE_DIGEST"]
	if results["IMAGE_URL"] == "" || results["IMAGE_DIGEST"] == "" {
		t.Fatalf("run %s has no IMAGE_URL/IMAGE_DIGEST: %v", run.Name, results)
	}
	tr := &pipelinev1.TaskRun{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kiln-reproduce-e2e-", Namespace: kilnNS},
		Spec: pipelinev1.TaskRunSpec{
			ServiceAccountName: "kiln-reproduce",
			TaskRef:            &pipelinev1.TaskRef{Name: "kiln-reproduce"},
			Params: pipelinev1.Params{
				{Name: "kiln-image", Value: *pipelinev1.NewStructuredValues(c.steps)},
				{Name: "image", Value: *pipelinev1.NewStructuredValues(image)},
			},
			Workspaces: []pipelinev1.WorkspaceBinding{
				{Name: "public-key", Secret: &corev1.SecretVolumeSource{SecretName: "kiln-cosign-pub"}},
				{Name: "registry-auth", Secret: &corev1.SecretVolumeSource{SecretName: "kiln-registry-auth"}},
			},
		},
	}
	c.adaptRun(tr)
	if err := c.c.Create(ctx, tr); err != nil {
		t.Fatalf("creating the kiln-reproduce TaskRun: %v", err)
	}
	c.waitCatalogRun(ctx, tr, 45*time.Minute)
	done := &pipelinev1.TaskRun{}
	if err := c.c.Get(ctx, client.ObjectKeyFromObject(tr), done); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, res := range done.Status.Results {
		got[res.Name] = res.Value.StringVal
	}
	t.Logf("kiln-reproduce on %s: REPRODUCED=%s DIFF=%q", image, got["REPRODUCED"], got["DIFF"])
	if got["REPRODUCED"] != "true" || got["DIFF"] != "identical" {
		t.Errorf("kiln-reproduce on %s: REPRODUCED %q, DIFF %q; want true, identical\n%s", image, got["REPRODUCED"], got["DIFF"],
			c.node.PodLogs(ctx, done.Namespace, done.Status.PodName))
	}
}
