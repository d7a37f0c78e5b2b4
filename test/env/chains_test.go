package env_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/test/env"
)

// TestChainsSignsTaskRun: the real Chains controller signs and attests the
// image a finished TaskRun names with image-build's results, IMAGE_URL,
// IMAGE_DIGEST and BASE_IMAGE_ARTIFACT_INPUTS, and stores both in the
// registry. The TaskRun's status is written directly: Chains reacts to a
// done TaskRun whoever ran it (test/e2e runs real ones).
func TestChainsSignsTaskRun(t *testing.T) {
	k := env.StartKube(t)
	// Not on localhost: on the private address the e2e's registry has.
	reg := env.StartRegistry(t, env.RegistryOptions{Addr: env.PrivateHostIP(t)})
	ch := env.StartChains(t, k, env.ChainsOptions{Config: env.ChainsConfig()})
	ctx := t.Context()

	image := pushRandom(t, reg.Host+"/kiln/node-image-worker:built")
	base := pushRandom(t, reg.Host+"/base/os:1")
	ns := "chains-smoke"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}},
	} {
		if err := k.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	tr := finishedTaskRun(t, k, ns, image, base)
	got := waitSigned(t, k, tr, ch)
	t.Logf("TaskRun %s annotations: %v", tr.Name, got.Annotations)

	stmts, err := sign.VerifiedStatements(ctx, registry.Remote{Insecure: []string{reg.Host}}, image.String(), ch.Verifier)
	if err != nil {
		t.Fatalf("verifying Chains' signature and attestation with its public key: %v\nChains log:\n%s", err, ch.Log())
	}
	if len(stmts) != 1 || stmts[0].Subject[0].Digest["sha256"] != image.DigestStr()[len("sha256:"):] {
		t.Fatalf("Chains' statements %+v, want one with subject %s", stmts, image)
	}
	mats := sign.StatementInputs(stmts[0])
	if mats["oci://"+base.Context().Name()] != base.DigestStr() {
		t.Errorf("provenance materials %v lack the base %s", mats, base)
	}
}

func pushRandom(t *testing.T, ref string) name.Digest {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return tag.Context().Digest(d.String())
}

// finishedTaskRun creates a TaskRun and writes it a succeeded status with
// image-build's results for image and base.
func finishedTaskRun(t *testing.T, k *env.Kube, ns string, image, base name.Digest) *tektonv1.TaskRun {
	t.Helper()
	ctx := t.Context()
	spec := &tektonv1.TaskSpec{Steps: []tektonv1.Step{{Name: "image-build", Image: "kiln.local/kiln-steps:e2e"}}}
	tr := &tektonv1.TaskRun{ObjectMeta: metav1.ObjectMeta{Name: "image-build", Namespace: ns},
		Spec: tektonv1.TaskRunSpec{TaskSpec: spec}}
	if err := k.Client.Create(ctx, tr); err != nil {
		t.Fatal(err)
	}
	// Chains may add its finalizer between the create and this write.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k.Client.Get(ctx, client.ObjectKeyFromObject(tr), tr); err != nil {
			return err
		}
		now := metav1.Now()
		tr.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded"})
		tr.Status.StartTime, tr.Status.CompletionTime = &now, &now
		tr.Status.TaskSpec = spec
		tr.Status.Results = []tektonv1.TaskRunResult{
			{Name: "IMAGE_URL", Type: tektonv1.ResultsTypeString, Value: *tektonv1.NewStructuredValues(image.Context().Name())},
			{Name: "IMAGE_DIGEST", Type: tektonv1.ResultsTypeString, Value: *tektonv1.NewStructuredValues(image.DigestStr())},
			{Name: "BASE_IMAGE_ARTIFACT_INPUTS", Type: tektonv1.ResultsTypeObject,
				Value: *tektonv1.NewObject(map[string]string{"uri": "oci://" + base.Context().Name(), "digest": base.DigestStr()})},
		}
		return k.Client.Status().Update(ctx, tr)
	})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// waitSigned waits for Chains' chains.tekton.dev/signed annotation and
// requires "true".
func waitSigned(t *testing.T, k *env.Kube, tr *tektonv1.TaskRun, ch *env.Chains) *tektonv1.TaskRun {
	t.Helper()
	got := &tektonv1.TaskRun{}
	deadline := time.Now().Add(time.Minute)
	for {
		if err := k.Client.Get(context.Background(), client.ObjectKeyFromObject(tr), got); err != nil {
			t.Fatal(err)
		}
		v, ok := got.Annotations[env.ChainsSignedAnnotation]
		if ok && v == "true" {
			return got
		}
		if ok || time.Now().After(deadline) {
			t.Fatalf("TaskRun %s: %s=%q, want \"true\"\nChains log:\n%s", tr.Name, env.ChainsSignedAnnotation, v, ch.Log())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
