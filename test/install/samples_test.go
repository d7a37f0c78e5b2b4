package install

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/pipeline"
	"github.com/kiln-dev/kiln/test/env"
)

func samplesDir() string { return filepath.Join(ConfigDir(), "samples") }

// kilnTasks loads tasks/ with Tekton's validation.
func kilnTasks(t *testing.T) map[string]*tektonv1.Task {
	t.Helper()
	out := map[string]*tektonv1.Task{}
	for _, p := range yamlFiles(t, filepath.Join(env.RepoRoot(), "tasks")) {
		task, err := pipeline.LoadTask(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		out[task.Name] = task
	}
	return out
}

// TestGitOpsPipelineSample validates config/samples/gitops/pipeline.yaml
// with Tekton's own validation and kiln's Task contract, and requires its
// kiln stages to be node-image's (it is generated from it): only render's
// source (the clone) and its runAfter (fetch) may differ.
func TestGitOpsPipelineSample(t *testing.T) {
	ctx := context.Background()
	sample, err := pipeline.LoadPipeline(ctx, filepath.Join(samplesDir(), "gitops", "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := pipeline.LoadPipeline(ctx, filepath.Join(env.RepoRoot(), "pipelines", "node-image.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fetch := sample.Spec.Tasks[0]
	if fetch.Name != "fetch" || fetch.TaskRef == nil || fetch.TaskRef.Resolver != "hub" || len(fetch.Workspaces) != 1 || fetch.Workspaces[0].Workspace != "manifests" {
		t.Fatalf("first task must clone into the manifests workspace: %+v", fetch)
	}
	kiln := sample.DeepCopy()
	kiln.Spec.Tasks = kiln.Spec.Tasks[1:]
	if err := pipeline.CheckPipelineTasks(kiln, kilnTasks(t)); err != nil {
		t.Fatal(err)
	}
	norm := func(pts []tektonv1.PipelineTask) []tektonv1.PipelineTask {
		out := slices.Clone(pts)
		for i := range out {
			out[i] = *out[i].DeepCopy()
			if out[i].Name == "render" {
				out[i].RunAfter = nil
			}
			for j := range out[i].Params {
				if out[i].Params[j].Name == "source" {
					out[i].Params[j].Value = tektonv1.ParamValue{}
				}
			}
		}
		return out
	}
	if d := cmp.Diff(norm(ref.Spec.Tasks), norm(kiln.Spec.Tasks)) + cmp.Diff(ref.Spec.Finally, kiln.Spec.Finally); d != "" {
		t.Errorf("config/samples/gitops/pipeline.yaml's kiln stages differ from pipelines/node-image.yaml: regenerate the sample (-want +got):\n%s", d)
	}
	for _, pt := range kiln.Spec.Tasks {
		for _, p := range pt.Params {
			if p.Name == "source" && pt.Name == "render" && !strings.HasPrefix(p.Value.StringVal, "dir:/workspace/manifests/") {
				t.Errorf("render's source %q does not read the clone", p.Value.StringVal)
			}
		}
	}
}

// checkRun holds a PipelineRun of the GitOps pipeline to it: params and
// workspaces it declares, and a kiln-X ServiceAccount for each kiln task.
func checkRun(t *testing.T, pr *tektonv1.PipelineRun) {
	t.Helper()
	pl, err := pipeline.LoadPipeline(context.Background(), filepath.Join(samplesDir(), "gitops", "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if pr.Spec.PipelineRef == nil || pr.Spec.PipelineRef.Name != pl.Name {
		t.Errorf("PipelineRun %s: pipelineRef %+v, want %s", pr.Name, pr.Spec.PipelineRef, pl.Name)
	}
	declared := map[string]tektonv1.ParamSpec{}
	for _, p := range pl.Spec.Params {
		declared[p.Name] = p
	}
	given := map[string]bool{}
	for _, p := range pr.Spec.Params {
		if _, ok := declared[p.Name]; !ok {
			t.Errorf("PipelineRun %s: param %s is not a param of %s", pr.Name, p.Name, pl.Name)
		}
		given[p.Name] = true
	}
	for n, p := range declared {
		if p.Default == nil && !given[n] {
			t.Errorf("PipelineRun %s: required param %s is missing", pr.Name, n)
		}
	}
	bound := map[string]bool{}
	for _, w := range pr.Spec.Workspaces {
		bound[w.Name] = true
	}
	for _, w := range pl.Spec.Workspaces {
		if !w.Optional && !bound[w.Name] {
			t.Errorf("PipelineRun %s: workspace %s is not bound", pr.Name, w.Name)
		}
	}
	sa := map[string]string{}
	for _, s := range pr.Spec.TaskRunSpecs {
		sa[s.PipelineTaskName] = s.ServiceAccountName
	}
	for _, pt := range append(slices.Clone(pl.Spec.Tasks), pl.Spec.Finally...) {
		if pt.TaskRef != nil && strings.HasPrefix(pt.TaskRef.Name, "kiln-") && sa[pt.Name] != pt.TaskRef.Name {
			t.Errorf("PipelineRun %s: task %s (Task %s) runs as %q, want ServiceAccount %s", pr.Name, pt.Name, pt.TaskRef.Name, sa[pt.Name], pt.TaskRef.Name)
		}
	}
}

// TestPipelinesAsCodeSample validates the .tekton/ PipelineRun with
// Tekton's validation (Pipelines-as-Code's {{ }} placeholders are plain
// strings to Tekton) and against the pipeline it runs.
func TestPipelinesAsCodeSample(t *testing.T) {
	pr, err := pipeline.LoadPipelineRun(context.Background(), filepath.Join(samplesDir(), "pipelines-as-code", ".tekton", "kiln-rebuild.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, pr)
	// PaC's annotations are bracketed, comma-separated lists.
	list := func(a string) []string {
		v := strings.TrimSpace(pr.Annotations["pipelinesascode.tekton.dev/"+a])
		if !strings.HasPrefix(v, "[") || !strings.HasSuffix(v, "]") {
			t.Errorf("annotation pipelinesascode.tekton.dev/%s = %q, want a [list]", a, v)
			return nil
		}
		var out []string
		for _, e := range strings.Split(v[1:len(v)-1], ",") {
			out = append(out, strings.TrimSpace(e))
		}
		return out
	}
	if got := list("on-event"); !slices.Contains(got, "push") {
		t.Errorf("on-event %v: the sample rebuilds on push", got)
	}
	if got := list("on-target-branch"); len(got) == 0 || got[0] == "" {
		t.Errorf("on-target-branch %v: want a branch", got)
	}
	// The path filter must cover the folder the run reads, or a change to
	// the manifests would start no rebuild.
	manifests := ""
	for _, p := range pr.Spec.Params {
		if p.Name == "manifests-path" {
			manifests = p.Value.StringVal
		}
	}
	paths := list("on-path-change")
	if manifests == "" || !slices.ContainsFunc(paths, func(glob string) bool {
		return strings.HasPrefix(glob, strings.TrimSuffix(manifests, "/")+"/")
	}) {
		t.Errorf("on-path-change %v does not cover the manifests-path param %q", paths, manifests)
	}
}

// readObjects is ReadObjects, failing t on error.
func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := ReadObjects(path)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func str(t *testing.T, o map[string]any, fields ...string) string {
	t.Helper()
	v, ok, err := unstructured.NestedString(o, fields...)
	if err != nil || !ok || v == "" {
		t.Errorf("%s: %v (%v)", strings.Join(fields, "."), "required string missing", err)
	}
	return v
}

func slice(t *testing.T, o map[string]any, fields ...string) []any {
	t.Helper()
	v, ok, err := unstructured.NestedSlice(o, fields...)
	if err != nil || !ok || len(v) == 0 {
		t.Errorf("%s: required list missing (%v)", strings.Join(fields, "."), err)
	}
	return v
}

var ttParam = regexp.MustCompile(`\$\(tt\.params\.([a-zA-Z0-9_-]+)\)`)

// TestTriggersSample parses the Tekton Triggers sample strictly, checks the
// fields Triggers requires and that the EventListener, TriggerBinding and
// TriggerTemplate name each other, and validates the PipelineRun the
// template creates with Tekton's own validation after substituting its
// $(tt.params.*).
func TestTriggersSample(t *testing.T) {
	dir := filepath.Join(samplesDir(), "triggers")
	var all []*unstructured.Unstructured
	for _, f := range yamlFiles(t, dir) {
		all = append(all, readObjects(t, f)...)
	}
	byKind := map[string]*unstructured.Unstructured{}
	for _, o := range all {
		if strings.HasPrefix(o.GetAPIVersion(), "triggers.tekton.dev/") {
			if o.GetAPIVersion() != "triggers.tekton.dev/v1beta1" {
				t.Errorf("%s %s: apiVersion %s, want triggers.tekton.dev/v1beta1", o.GetKind(), o.GetName(), o.GetAPIVersion())
			}
			byKind[o.GetKind()] = o
		}
		if o.GetNamespace() != "" && o.GetNamespace() != installNS {
			t.Errorf("%s %s: namespace %s, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), installNS)
		}
	}
	tb, tt, el := byKind["TriggerBinding"], byKind["TriggerTemplate"], byKind["EventListener"]
	if tb == nil || tt == nil || el == nil {
		t.Fatalf("want a TriggerBinding, a TriggerTemplate and an EventListener, have %v", byKind)
	}

	ttParams := map[string]bool{}
	for _, p := range slice(t, tt.Object, "spec", "params") {
		ttParams[str(t, p.(map[string]any), "name")] = true
	}
	for _, p := range slice(t, tb.Object, "spec", "params") {
		pm := p.(map[string]any)
		if n := str(t, pm, "name"); !ttParams[n] {
			t.Errorf("TriggerBinding param %s is not a TriggerTemplate param", n)
		}
		if v := str(t, pm, "value"); !strings.HasPrefix(v, "$(body.") {
			t.Errorf("TriggerBinding value %q does not read the event body", v)
		}
	}

	sas := map[string]bool{}
	for _, o := range all {
		if o.GetKind() == "ServiceAccount" {
			sas[o.GetName()] = true
		}
	}
	if sa := str(t, el.Object, "spec", "serviceAccountName"); !sas[sa] {
		t.Errorf("EventListener ServiceAccount %s is not in the sample", sa)
	}
	for _, tr := range slice(t, el.Object, "spec", "triggers") {
		m := tr.(map[string]any)
		for _, b := range slice(t, m, "bindings") {
			if r := str(t, b.(map[string]any), "ref"); r != tb.GetName() {
				t.Errorf("EventListener binding ref %s, want %s", r, tb.GetName())
			}
		}
		if r := str(t, m, "template", "ref"); r != tt.GetName() {
			t.Errorf("EventListener template ref %s, want %s", r, tt.GetName())
		}
	}

	rts := slice(t, tt.Object, "spec", "resourcetemplates")
	if len(rts) != 1 {
		t.Fatalf("TriggerTemplate: %d resourcetemplates, want the PipelineRun", len(rts))
	}
	b, err := yaml.Marshal(rts[0])
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	sub := ttParam.ReplaceAllStringFunc(string(b), func(m string) string {
		n := ttParam.FindStringSubmatch(m)[1]
		if !ttParams[n] {
			bad = append(bad, n)
		}
		return "sample-" + n
	})
	if len(bad) > 0 {
		t.Errorf("TriggerTemplate uses undeclared params %v", bad)
	}
	p := filepath.Join(t.TempDir(), "pipelinerun.yaml")
	// generateName is all Triggers needs; Tekton's validation wants a name.
	sub = regexp.MustCompile(`generateName: (\S+)`).ReplaceAllString(sub, "name: ${1}1")
	if err := os.WriteFile(p, []byte(sub), 0o644); err != nil {
		t.Fatal(err)
	}
	pr, err := pipeline.LoadPipelineRun(context.Background(), p)
	if err != nil {
		t.Fatalf("the TriggerTemplate's PipelineRun: %v", err)
	}
	checkRun(t, pr)
}

// TestGitOpsSampleMetadataMatchesNodeImage: the GitOps sample Pipeline
// carries node-image's version label and its catalog annotations but the
// display name (minVersion, platforms, categories, tags), and the part-of
// label make install gives node-image (config/kustomization.yaml), since
// the sample is applied on its own.
func TestGitOpsSampleMetadataMatchesNodeImage(t *testing.T) {
	ctx := context.Background()
	sample, err := pipeline.LoadPipeline(ctx, filepath.Join(samplesDir(), "gitops", "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := pipeline.LoadPipeline(ctx, filepath.Join(env.RepoRoot(), "pipelines", "node-image.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(ConfigDir())
	if err != nil {
		t.Fatal(err)
	}
	var installed map[string]string
	for _, o := range objs {
		if o.GetKind() == "Pipeline" && o.GetName() == ref.Name {
			installed = o.GetLabels()
		}
	}
	if installed == nil {
		t.Fatalf("make install does not install Pipeline %s", ref.Name)
	}
	wantAnn := map[string]string{}
	for k, v := range ref.Annotations {
		if k != "tekton.dev/displayName" {
			wantAnn[k] = v
		}
	}
	gotAnn := map[string]string{}
	for k, v := range sample.Annotations {
		if k != "tekton.dev/displayName" {
			gotAnn[k] = v
		}
	}
	if diff := cmp.Diff(wantAnn, gotAnn); diff != "" {
		t.Errorf("config/samples/gitops/pipeline.yaml annotations (-node-image +sample):\n%s", diff)
	}
	if diff := cmp.Diff(installed, sample.Labels); diff != "" {
		t.Errorf("config/samples/gitops/pipeline.yaml labels (-node-image as installed +sample):\n%s", diff)
	}
}

// TestFailureResultsFirst: FAILED_STAGE and FAILURE lead node-image's and
// the GitOps sample's results, in that order; Tekton lists a run's results
// in the Pipeline's order, and `tkn pr describe` and the Dashboard show
// them so, so a failed run's cause is the first thing read.
func TestFailureResultsFirst(t *testing.T) {
	for _, f := range []string{
		filepath.Join(env.RepoRoot(), "pipelines", "node-image.yaml"),
		filepath.Join(samplesDir(), "gitops", "pipeline.yaml"),
	} {
		p, err := pipeline.LoadPipeline(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range p.Spec.Results {
			names = append(names, r.Name)
		}
		if len(names) < 2 || names[0] != "FAILED_STAGE" || names[1] != "FAILURE" {
			t.Errorf("%s: results %q, want FAILED_STAGE and FAILURE first", filepath.Base(f), names)
		}
	}
}
