package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	intoto "github.com/in-toto/in-toto-golang/in_toto"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/test/env"
)

// assertChains: Tekton Chains, with no kiln-specific setup but
// env.ChainsConfig, signed and attested the images of the run's
// image-build TaskRun and, where the kmod stages ran, of its kmod-sign
// TaskRun, from their results' type hints. The signature and the
// attestation verify with Chains' public key; the attestation's subject is
// the image and its materials name the image's base by digest.
func (c *cluster) assertChains(ctx context.Context, r *pipelinev1.PipelineRun) {
	c.t.Helper()
	trs := c.taskRuns(ctx, r)
	image := trs["image-build"].result("IMAGE_URL") + "@" + trs["image-build"].result("IMAGE_DIGEST")
	// The base image-build layered on: render's BASE_IMAGE, or the signed
	// kmod image when the pool has a ModuleDay0.
	base := trs["render"].result("BASE_IMAGE")
	if ks, ok := trs["kmod-sign"]; ok {
		kmod := ks.result("KMOD_IMAGE_URL") + "@" + ks.result("KMOD_IMAGE_DIGEST")
		c.assertChainsImage(ctx, ks.tr, kmod, "")
		base = kmod
	}
	c.assertChainsImage(ctx, trs["image-build"].tr, image, base)
	c.assertChainsRunAnnotations(ctx, r)
}

// assertChainsRunAnnotations: once Chains has processed the PipelineRun
// (it marks it signed even with PipelineRun artifacts off), no annotation
// of Chains' on it is a payload or a signature (env.ChainsConfig).
func (c *cluster) assertChainsRunAnnotations(ctx context.Context, r *pipelinev1.PipelineRun) {
	c.t.Helper()
	got := &pipelinev1.PipelineRun{}
	c.poll(ctx, 2*time.Minute, fmt.Sprintf("Chains to process PipelineRun %s", r.Name), func() bool {
		if err := c.c.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
			c.t.Fatal(err)
		}
		_, ok := got.Annotations[env.ChainsSignedAnnotation]
		return ok
	})
	total := 0
	for k, v := range got.Annotations {
		if !strings.HasPrefix(k, env.ChainsAnnotationPrefix) {
			continue
		}
		total += len(v)
		if len(v) > env.MaxChainsAnnotation {
			c.t.Errorf("PipelineRun %s: Chains' annotation %s is %d bytes (over %d): PipelineRun artifacts should be off",
				r.Name, k, len(v), env.MaxChainsAnnotation)
		}
	}
	c.t.Logf("Chains: PipelineRun %s %s=%q; Chains' annotations total %d bytes",
		r.Name, env.ChainsSignedAnnotation, got.Annotations[env.ChainsSignedAnnotation], total)
}

// assertChainsImage checks Chains' work on one TaskRun and its image;
// base, when set, must be among the provenance's materials.
func (c *cluster) assertChainsImage(ctx context.Context, tr *pipelinev1.TaskRun, image, base string) {
	c.t.Helper()
	signed := c.waitChainsSigned(ctx, tr)
	stmts, err := sign.VerifiedStatements(ctx, registry.Remote{Insecure: []string{c.reg.Host}}, image, c.chains.Verifier)
	if err != nil {
		c.t.Errorf("TaskRun %s: Chains' signature of %s: %v\nChains' errors:\n%s", tr.Name, image, err, c.chains.Errors(tr.Name))
		return
	}
	// One statement per TaskRun that named the image: a reused image (the
	// kmod image of an unchanged ModuleDay0) is attested again by each run.
	digest := image[strings.LastIndex(image, "@")+1:]
	var mine []intoto.Statement
	for _, st := range stmts {
		if len(st.Subject) == 1 && "sha256:"+st.Subject[0].Digest["sha256"] == digest {
			mine = append(mine, st)
		}
	}
	if len(mine) == 0 || len(mine) != len(stmts) {
		c.t.Errorf("TaskRun %s: %d of Chains' %d statements have the subject %s, want all and at least one", tr.Name, len(mine), len(stmts), image)
		return
	}
	mats := sign.StatementInputs(mine[len(mine)-1])
	if base != "" {
		repo, d, _ := strings.Cut(base, "@")
		found := false
		for _, st := range mine {
			found = found || sign.StatementInputs(st)["oci://"+repo] == d
		}
		if !found {
			c.t.Errorf("TaskRun %s: provenance materials %v lack the base %s", tr.Name, mats, base)
		}
	}
	c.t.Logf("Chains: TaskRun %s %s=%q; verified %s with Chains' public key: the signature (simplesigning, "+
		"claims validated) and the attestation (%s, subject %s sha256:%s, %d materials)", tr.Name, env.ChainsSignedAnnotation,
		signed.Annotations[env.ChainsSignedAnnotation], image, mine[0].PredicateType, mine[0].Subject[0].Name,
		mine[0].Subject[0].Digest["sha256"], len(mats))
}

// waitChainsSigned waits for Chains to annotate tr signed, which it does
// shortly after the TaskRun finished.
func (c *cluster) waitChainsSigned(ctx context.Context, tr *pipelinev1.TaskRun) *pipelinev1.TaskRun {
	c.t.Helper()
	got := &pipelinev1.TaskRun{}
	c.poll(ctx, 2*time.Minute, fmt.Sprintf("Chains to sign TaskRun %s", tr.Name), func() bool {
		if err := c.c.Get(ctx, client.ObjectKeyFromObject(tr), got); err != nil {
			c.t.Fatal(err)
		}
		v, ok := got.Annotations[env.ChainsSignedAnnotation]
		if ok && v != "true" {
			c.t.Fatalf("TaskRun %s: %s=%q\nChains' errors:\n%s", tr.Name, env.ChainsSignedAnnotation, v, c.chains.Errors(tr.Name))
		}
		return ok
	})
	return got
}

// ranTask is a TaskRun of a PipelineRun with its results by name.
type ranTask struct {
	tr      *pipelinev1.TaskRun
	results map[string]string
}

func (r ranTask) result(name string) string { return r.results[name] }

// taskRuns are r's TaskRuns by pipeline task name.
func (c *cluster) taskRuns(ctx context.Context, r *pipelinev1.PipelineRun) map[string]ranTask {
	c.t.Helper()
	out := map[string]ranTask{}
	for _, ref := range r.Status.ChildReferences {
		tr := &pipelinev1.TaskRun{}
		if err := c.c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: ref.Name}, tr); err != nil {
			c.t.Fatal(err)
		}
		rt := ranTask{tr: tr, results: map[string]string{}}
		for _, res := range tr.Status.Results {
			rt.results[res.Name] = res.Value.StringVal
		}
		out[ref.PipelineTaskName] = rt
	}
	return out
}
