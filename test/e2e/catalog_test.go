package e2e

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/tektoncd/pipeline/pkg/apis/pipeline/pod"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/hack/catalog/catlint"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/test/env"
)

// testCatalog runs the tests/ folder of every catalog resource the way
// tektoncd/catalog's CI does (test/e2e-common.sh, test_resource_creation):
// the resource's YAML is copied, tests/pre-apply-task-hook.sh is sourced
// on the copy, the copy is created; then each tests/*.yaml, in name order,
// is copied, tests/pre-apply-taskrun-hook.sh is sourced on the copy, and
// the copy is created; every run must succeed. One subtest per resource.
//
// Where this runner differs from the catalog's, and why:
//   - kiln's Tasks need the ServiceAccounts, RBAC and Secrets config/
//     installs in kiln's namespace, so the tests run there instead of in a
//     namespace of their own; the resource replaces the Task or Pipeline
//     config/ installed under the same name (this is the last scenario);
//   - folders run one after another, each waited for, not all at once:
//     several roll out or patch the same pool and MachineSets;
//   - this cluster has no kube-proxy, a plain-HTTP registry and no default
//     StorageClass, so every run gets the pod environment kiln-config
//     gives kiln's own runs and claims that name no class get the
//     cluster's, as a platform script of the catalog's CI adapts runs.
//
// The hooks get TMPF and the KILN_E2E_* values (catlint.E2EValues): the
// kiln-steps image built here (every run overrides the steps image param
// with it; the pinned default is never pulled), the registry, the worker
// pool's current image and the driver toolkit.
func (c *cluster) testCatalog(ctx context.Context) {
	c.t.Helper()
	mc := &mcfgv1.MachineConfig{}
	if err := c.c.Get(ctx, client.ObjectKey{Name: rollout.MachineConfigName("worker")}, mc); err != nil {
		c.t.Fatalf("reading the worker pool's image: %v", err)
	}
	hookEnv := []string{
		"KILN_E2E_STEPS_IMAGE=" + c.steps,
		"KILN_E2E_REGISTRY=" + c.reg.Host,
		"KILN_E2E_IMAGE=" + mc.Spec.OSImageURL,
		"KILN_E2E_DTK_IMAGE=" + c.dtk,
	}
	dir := filepath.Join(env.RepoRoot(), "catalog")
	var folders []string
	for _, kind := range []string{"task", "pipeline"} {
		m, _ := filepath.Glob(filepath.Join(dir, kind, "*", "*", "tests"))
		folders = append(folders, m...)
	}
	sort.Strings(folders)
	if len(folders) == 0 {
		c.t.Fatalf("no tests/ folder under %s", dir)
	}
	for _, tests := range folders {
		rel, _ := filepath.Rel(dir, filepath.Dir(tests))
		c.t.Run("catalog/"+filepath.ToSlash(rel), func(t *testing.T) {
			sub := *c
			sub.t = t
			sub.runCatalogTests(ctx, filepath.Dir(tests), hookEnv)
		})
	}
}

// runCatalogTests runs one resource's tests/ folder; resDir is
// <kind>/<name>/<version>.
func (c *cluster) runCatalogTests(ctx context.Context, resDir string, hookEnv []string) {
	name := filepath.Base(filepath.Dir(resDir))
	c.applyCatalogResource(ctx, filepath.Join(resDir, name+".yaml"), filepath.Join(resDir, "tests", catlint.TaskHook), hookEnv)
	files, err := catlint.PrepareTests(ctx, filepath.Join(resDir, "tests"), hookEnv)
	if err != nil {
		c.t.Fatal(err)
	}
	var runs []client.Object
	for _, f := range files {
		for _, d := range f.Docs {
			// Created as kubectl creates the file: what the hook left, not
			// the defaulted copy the checks made.
			obj, _, err := catlint.Decoder().Decode(d.Raw, nil, nil)
			if err != nil {
				c.t.Fatalf("tests/%s: %v", f.Name, err)
			}
			raw, ok := obj.(client.Object)
			if !ok {
				c.t.Fatalf("tests/%s: %T is not an object", f.Name, obj)
			}
			c.adaptRun(raw)
			raw.SetNamespace(kilnNS)
			if err := c.c.Create(ctx, raw); err != nil {
				c.t.Fatalf("tests/%s: creating %T %s: %v", f.Name, raw, raw.GetName()+raw.GetGenerateName(), err)
			}
			switch raw.(type) {
			case *pipelinev1.TaskRun, *pipelinev1.PipelineRun:
				runs = append(runs, raw)
			}
		}
	}
	if len(runs) == 0 {
		c.t.Fatal("tests/ created no TaskRun or PipelineRun")
	}
	for _, r := range runs {
		c.waitCatalogRun(ctx, r, 30*time.Minute)
	}
}

// applyCatalogResource creates the resource from a copy the task hook may
// change, replacing the object of that name.
func (c *cluster) applyCatalogResource(ctx context.Context, file, hook string, hookEnv []string) {
	b, err := os.ReadFile(file)
	if err != nil {
		c.t.Fatal(err)
	}
	tmpf := filepath.Join(c.t.TempDir(), filepath.Base(file))
	if err := os.WriteFile(tmpf, b, 0o644); err != nil {
		c.t.Fatal(err)
	}
	if err := catlint.SourceHook(hook, tmpf, hookEnv); err != nil {
		c.t.Fatal(err)
	}
	if b, err = os.ReadFile(tmpf); err != nil {
		c.t.Fatal(err)
	}
	obj, _, err := catlint.Decoder().Decode(b, nil, nil)
	if err != nil {
		c.t.Fatalf("decoding %s: %v", file, err)
	}
	o := obj.(client.Object)
	o.SetNamespace(kilnNS)
	if err := c.c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
		c.t.Fatalf("deleting %s %s: %v", path.Base(file), o.GetName(), err)
	}
	if err := c.c.Create(ctx, o); err != nil {
		c.t.Fatalf("creating %s: %v", file, err)
	}
}

// adaptRun gives a run this cluster's pod environment (the apiserver's
// address, the plain-HTTP registry), as kiln-config's podTemplate gives
// kiln's own runs, and the e2e's StorageClass to claims that name none.
func (c *cluster) adaptRun(o client.Object) {
	vars := c.apiserverEnv()
	vars["KILN_INSECURE_REGISTRY"] = c.reg.Host
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	addEnv := func(pt **pod.PodTemplate) {
		if *pt == nil {
			*pt = &pod.PodTemplate{}
		}
		for _, k := range names {
			(*pt).Env = append((*pt).Env, corev1.EnvVar{Name: k, Value: vars[k]})
		}
	}
	class := storageClass
	claims := func(ws []pipelinev1.WorkspaceBinding) {
		for _, w := range ws {
			if t := w.VolumeClaimTemplate; t != nil && t.Spec.StorageClassName == nil {
				t.Spec.StorageClassName = &class
			}
		}
	}
	switch r := o.(type) {
	case *pipelinev1.TaskRun:
		addEnv(&r.Spec.PodTemplate)
		claims(r.Spec.Workspaces)
	case *pipelinev1.PipelineRun:
		addEnv(&r.Spec.TaskRunTemplate.PodTemplate)
		claims(r.Spec.Workspaces)
	}
}

// waitCatalogRun waits for a TaskRun or PipelineRun to succeed, then
// checks that every step of it ran the kiln-steps image built here: the
// run overrode the pinned default of the steps image param.
func (c *cluster) waitCatalogRun(ctx context.Context, o client.Object, timeout time.Duration) {
	c.t.Helper()
	switch o.(type) {
	case *pipelinev1.PipelineRun:
		pr := c.waitDone(ctx, o.(*pipelinev1.PipelineRun), timeout)
		for _, ref := range pr.Status.ChildReferences {
			tr := &pipelinev1.TaskRun{}
			if err := c.c.Get(ctx, client.ObjectKey{Namespace: pr.Namespace, Name: ref.Name}, tr); err != nil {
				c.t.Fatal(err)
			}
			c.assertStepsImage(ctx, tr)
		}
	case *pipelinev1.TaskRun:
		tr := &pipelinev1.TaskRun{}
		c.poll(ctx, timeout, "TaskRun "+o.GetName()+" to finish", func() bool {
			if err := c.c.Get(ctx, client.ObjectKeyFromObject(o), tr); err != nil {
				c.t.Fatal(err)
			}
			return tr.IsDone()
		})
		if cond := tr.Status.GetCondition("Succeeded"); !cond.IsTrue() {
			c.t.Fatalf("TaskRun %s did not succeed: %s\n%s", tr.Name, cond.GetMessage(), c.node.PodLogs(ctx, tr.Namespace, tr.Status.PodName))
		}
		c.assertStepsImage(ctx, tr)
	}
}

// assertStepsImage: every step of a kiln Task's TaskRun ran the
// kiln-steps image built here. Other Tasks (the GitOps fetch) are not
// kiln's.
func (c *cluster) assertStepsImage(ctx context.Context, tr *pipelinev1.TaskRun) {
	c.t.Helper()
	if tr.Spec.TaskRef == nil || !strings.HasPrefix(tr.Spec.TaskRef.Name, "kiln-") {
		return
	}
	p := &corev1.Pod{}
	if err := c.c.Get(ctx, client.ObjectKey{Namespace: tr.Namespace, Name: tr.Status.PodName}, p); err != nil {
		c.t.Errorf("TaskRun %s: its pod: %v", tr.Name, err)
		return
	}
	for _, ctr := range p.Spec.Containers {
		if strings.HasPrefix(ctr.Name, "step-") && ctr.Image != c.steps {
			c.t.Errorf("TaskRun %s: container %s runs %s, want the e2e's kiln-steps image %s", tr.Name, ctr.Name, ctr.Image, c.steps)
		}
	}
}
