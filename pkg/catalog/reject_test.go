package catalog

import (
	"context"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/test/golden"
)

const fixtureTask = `apiVersion: tekton.dev/v1
kind: Task
metadata:
  name: kiln-demo
  labels:
    app.kubernetes.io/version: "0.1"
  annotations:
    tekton.dev/pipelines.minVersion: "0.56.0"
    tekton.dev/categories: "Build Tools"
    tekton.dev/tags: "openshift, demo"
    tekton.dev/displayName: "kiln demo"
    tekton.dev/platforms: "linux/amd64"
spec:
  description: >-
    A demo Task.
  params:
    - name: pool
      type: string
  workspaces:
    - name: work
  steps:
    - name: demo
      image: img
      command: [kiln-steps]
      args: [render, --pool=$(params.pool)]
`

const fixturePipeline = `apiVersion: tekton.dev/v1
kind: Pipeline
metadata:
  name: kiln-demo-pipeline
  labels:
    app.kubernetes.io/version: "0.2"
  annotations:
    tekton.dev/pipelines.minVersion: "0.56.0"
    tekton.dev/categories: "Deployment"
    tekton.dev/tags: "openshift"
    tekton.dev/displayName: "kiln demo pipeline"
    tekton.dev/platforms: "linux/amd64,linux/arm64"
spec:
  description: A demo Pipeline.
  params:
    - name: pool
      type: string
  workspaces:
    - name: work
  tasks:
    - name: demo
      taskRef:
        name: kiln-demo
      params:
        - name: pool
          value: $(params.pool)
      workspaces:
        - name: work
          workspace: work
`

// fixtureRepo writes a repository with one Task and one Pipeline.
func fixtureRepo(t *testing.T, task, pl string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "tasks/demo.yaml", task)
	write(t, dir, "pipelines/demo.yaml", pl)
	return dir
}

// TestLoadRejects: a source that lacks what the catalog needs fails with
// the file, the object and the field, and nothing is loaded.
func TestLoadRejects(t *testing.T) {
	drop := func(line string) func(string) string {
		return func(s string) string { return strings.Replace(s, line, "", 1) }
	}
	sub := func(old, new string) func(string) string {
		return func(s string) string { return strings.Replace(s, old, new, 1) }
	}
	cases := []struct {
		name     string
		task, pl func(string) string
		want     []string
	}{
		{"no version label", drop("    app.kubernetes.io/version: \"0.1\"\n"), nil,
			[]string{"tasks/demo.yaml: Task kiln-demo:", `metadata.labels["app.kubernetes.io/version"] is missing`}},
		{"no minVersion", drop("    tekton.dev/pipelines.minVersion: \"0.56.0\"\n"), nil,
			[]string{"tasks/demo.yaml", `metadata.annotations["tekton.dev/pipelines.minVersion"] is missing`}},
		{"no categories", drop("    tekton.dev/categories: \"Build Tools\"\n"), nil,
			[]string{"tasks/demo.yaml", `metadata.annotations["tekton.dev/categories"] is missing`}},
		{"no tags", drop("    tekton.dev/tags: \"openshift, demo\"\n"), nil,
			[]string{"tasks/demo.yaml", `metadata.annotations["tekton.dev/tags"] is missing`}},
		{"no displayName", drop("    tekton.dev/displayName: \"kiln demo\"\n"), nil,
			[]string{"tasks/demo.yaml", `metadata.annotations["tekton.dev/displayName"] is missing`}},
		{"no platforms", nil, drop("    tekton.dev/platforms: \"linux/amd64,linux/arm64\"\n"),
			[]string{"pipelines/demo.yaml: Pipeline kiln-demo-pipeline:", `metadata.annotations["tekton.dev/platforms"] is missing`}},
		{"no description", sub("  description: >-\n    A demo Task.\n", ""), nil,
			[]string{"tasks/demo.yaml", "spec.description is missing"}},
		{"version not major.minor", sub(`version: "0.1"`, `version: "1"`), nil,
			[]string{`metadata.labels["app.kubernetes.io/version"] "1": want <major>.<minor>`}},
		{"minVersion not semver", sub(`minVersion: "0.56.0"`, `minVersion: "latest"`), nil,
			[]string{`"tekton.dev/pipelines.minVersion"] "latest"`}},
		{"unknown category", sub(`"Build Tools"`, `"Builds"`), nil,
			[]string{`metadata.annotations["tekton.dev/categories"] "Builds": not a Tekton Hub category`}},
		{"bad platform", sub(`"linux/amd64"`, `"amd64"`), nil,
			[]string{`metadata.annotations["tekton.dev/platforms"] "amd64": ` + PlatformRule}},
		{"duplicate tag", sub(`"openshift, demo"`, `"openshift, openshift"`), nil,
			[]string{`"openshift": listed twice`}},
		{"Tekton validation", sub("command: [kiln-steps]", "command: [kiln-steps]\n      comand: [x]"), nil,
			[]string{"tasks/demo.yaml", `unknown field "comand"`}},
		{"pipeline names an unknown Task", nil, sub("name: kiln-demo\n", "name: kiln-nope\n"),
			[]string{"pipelines/demo.yaml", "Task kiln-nope not found"}},
		{"two problems, both reported", drop("    tekton.dev/tags: \"openshift, demo\"\n"), drop("    tekton.dev/platforms: \"linux/amd64,linux/arm64\"\n"),
			[]string{"tasks/demo.yaml", "tekton.dev/tags", "pipelines/demo.yaml", "tekton.dev/platforms"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task, pl := fixtureTask, fixturePipeline
			if c.task != nil {
				task = c.task(task)
			}
			if c.pl != nil {
				pl = c.pl(pl)
			}
			rs, err := Load(context.Background(), fixtureRepo(t, task, pl))
			if err == nil {
				t.Fatalf("loaded %d resources, want an error", len(rs))
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			if rs != nil {
				t.Errorf("resources returned with an error")
			}
		})
	}
}

// TestFixtureGenerates: the fixture is valid as written (so every case
// above fails for its own reason) and lands at its TEP-0003 paths.
func TestFixtureGenerates(t *testing.T) {
	ctx := context.Background()
	rs, err := Load(ctx, fixtureRepo(t, fixtureTask, fixturePipeline))
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"task/kiln-demo/0.1/kiln-demo.yaml", "task/kiln-demo/0.1/README.md", "task/kiln-demo/0.1/samples/taskrun.yaml",
		"pipeline/kiln-demo-pipeline/0.2/kiln-demo-pipeline.yaml", "pipeline/kiln-demo-pipeline/0.2/README.md",
		"pipeline/kiln-demo-pipeline/0.2/samples/pipelinerun.yaml",
		"artifacthub-repo.yml", "task/artifacthub-repo.yml", "pipeline/artifacthub-repo.yml", "README.md",
	} {
		if _, ok := files[p]; !ok {
			t.Errorf("%s not generated", p)
		}
	}
	if len(files) != 10 {
		t.Errorf("%d files generated, want 10", len(files))
	}
	if string(files["task/kiln-demo/0.1/kiln-demo.yaml"]) != fixtureTask {
		t.Errorf("the published Task is not the source byte for byte")
	}
	golden.Check(t, "testdata/demo-task-README.md", files["task/kiln-demo/0.1/README.md"])
	golden.Check(t, "testdata/demo-pipelinerun.yaml", files["pipeline/kiln-demo-pipeline/0.2/samples/pipelinerun.yaml"])
}

// TestSampleRejects: a required param or workspace the generator has no
// sample for stops it, naming the file, the resource and the name.
func TestSampleRejects(t *testing.T) {
	ctx := context.Background()
	cases := []struct{ name, old, new, want string }{
		{"param", "    - name: pool\n      type: string\n", "    - name: pool\n      type: string\n    - name: flavour\n      type: string\n",
			"pipelines/demo.yaml: Pipeline kiln-demo-pipeline: required param flavour has no sample value"},
		{"workspace", "  workspaces:\n    - name: work\n", "  workspaces:\n    - name: work\n    - name: cache\n",
			"pipelines/demo.yaml: Pipeline kiln-demo-pipeline: required workspace cache has no sample binding"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs, err := Load(ctx, fixtureRepo(t, fixtureTask, strings.Replace(fixturePipeline, c.old, c.new, 1)))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Files(ctx, rs)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// TestValidateRunRejects: the sample check catches what Tekton would
// refuse, at admission or when the run starts.
func TestValidateRunRejects(t *testing.T) {
	ctx := context.Background()
	rs, err := Load(ctx, fixtureRepo(t, fixtureTask, fixturePipeline))
	if err != nil {
		t.Fatal(err)
	}
	task, pl := rs[0], rs[1]
	const tr = "apiVersion: tekton.dev/v1\nkind: TaskRun\nmetadata: {generateName: x-}\nspec:\n  taskRef: {name: kiln-demo}\n"
	const pr = "apiVersion: tekton.dev/v1\nkind: PipelineRun\nmetadata: {generateName: x-}\nspec:\n  pipelineRef: {name: kiln-demo-pipeline}\n"
	const ok = "  params: [{name: pool, value: worker}]\n  workspaces: [{name: work, emptyDir: {}}]\n"
	cases := []struct {
		name string
		r    *Resource
		yaml string
		want string
	}{
		{"valid TaskRun", task, tr + ok, ""},
		{"valid PipelineRun", pl, pr + ok, ""},
		{"missing param", task, tr + "  workspaces: [{name: work, emptyDir: {}}]\n", "required param pool is not given"},
		{"valid with a timeout", task, tr + ok + "  timeout: 1h\n", ""},
		{"typo param", pl, strings.Replace(pr+ok, "{name: pool", "{name: pool, value: w}, {name: pol", 1), "no param pol is declared"},
		{"array for string", task, strings.Replace(tr+ok, "value: worker", "value: [a]", 1), "param pool is array, declared string"},
		{"unbound workspace", task, tr + "  params: [{name: pool, value: worker}]\n", `declared workspace "work" is required but has not been bound`},
		{"unknown workspace", pl, strings.Replace(pr+ok, "{name: work, emptyDir: {}}", "{name: work, emptyDir: {}}, {name: wrk, emptyDir: {}}", 1), `workspace binding "wrk" does not match any declared workspace`},
		{"unknown field", task, tr + ok + "  serviceAcount: x\n", `unknown field "serviceAcount"`},
		{"other Task", task, strings.Replace(tr+ok, "name: kiln-demo}", "name: kiln-other}", 1), "spec.taskRef.name must be kiln-demo"},
		{"Tekton validation", task, strings.Replace(tr+ok, "emptyDir: {}", "emptyDir: {}, secret: {secretName: s}", 1), "expected exactly one, got both"},
		{"wrong kind", task, pr + ok, "want tekton.dev/v1/TaskRun"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateRun(ctx, []byte(c.yaml), c.r)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	rs := loadRepo(t)
	if _, err := Select(rs, "kiln-bootimages"); err == nil || !strings.Contains(err.Error(), "say task/kiln-bootimages or pipeline/kiln-bootimages") {
		t.Errorf("ambiguous name: %v", err)
	}
	got, err := Select(rs, "pipeline/kiln-bootimages", "kiln-render")
	if err != nil || len(got) != 2 || got[0].Kind != KindPipeline || got[1].Name != "kiln-render" {
		t.Errorf("Select: %v %v", got, err)
	}
	if _, err := Select(rs, "kiln-nope"); err == nil || !strings.Contains(err.Error(), `selecting "kiln-nope": no Task or Pipeline of that name`) || !strings.Contains(err.Error(), "task/kiln-render") {
		t.Errorf("unknown name: %v", err)
	}
}

// FuzzParseMetadata: any annotation text is either refused or parsed into
// values that are each valid on their own (no panic, no empty item).
func FuzzParseMetadata(f *testing.F) {
	f.Add("0.1", "0.56.0", "Build Tools", "openshift, coreos", "kiln", "linux/amd64,linux/arm64")
	f.Add("1", "x", ",,", " ", "", "linux")
	f.Fuzz(func(t *testing.T, ver, minV, cats, tags, display, plats string) {
		m, err := ParseMetadata(map[string]string{LabelVersion: ver}, map[string]string{
			AnnotationMinVersion: minV, AnnotationCategories: cats, AnnotationTags: tags,
			AnnotationDisplayName: display, AnnotationPlatforms: plats,
		})
		if err != nil {
			return
		}
		if m.Version != ver || m.DisplayName == "" || len(m.Categories) == 0 || len(m.Tags) == 0 || len(m.Platforms) == 0 {
			t.Fatalf("accepted incomplete metadata %+v", m)
		}
		for _, list := range [][]string{m.Categories, m.Tags, m.Platforms} {
			for _, s := range list {
				if s == "" || strings.TrimSpace(s) != s || strings.Contains(s, ",") {
					t.Fatalf("accepted item %q", s)
				}
			}
		}
	})
}
