package catalog

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/pipeline"
)

const repoRoot = "../.."

func loadRepo(t testing.TB) []*Resource {
	t.Helper()
	rs, err := Load(context.Background(), repoRoot)
	if err != nil {
		t.Fatalf("loading tasks/ and pipelines/: %v", err)
	}
	return rs
}

// TestCatalogInSync regenerates the catalog into a temporary directory and
// compares it, file by file, with catalog/ in the repository.
func TestCatalogInSync(t *testing.T) {
	ctx := context.Background()
	rs := loadRepo(t)
	files, err := Files(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Files(ctx, loadRepo(t))
	if err != nil {
		t.Fatal(err)
	}
	for p, b := range files {
		if !bytes.Equal(b, again[p]) {
			t.Errorf("%s: two generations differ; the generator is not deterministic", p)
		}
	}
	tmp := t.TempDir()
	if err := Write(tmp, files); err != nil {
		t.Fatal(err)
	}
	if d, err := Diff(tmp, files); err != nil || len(d) > 0 {
		t.Fatalf("Write then Diff on the same files: %v %v", d, err)
	}
	d, err := Diff(filepath.Join(repoRoot, "catalog"), files)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) > 0 {
		t.Fatalf("catalog/ is out of date with tasks/ and pipelines/; run make catalog:\n  %s", strings.Join(d, "\n  "))
	}
	// Every source is published, and under its TEP-0003 path.
	for _, r := range rs {
		if _, err := os.Stat(filepath.Join(repoRoot, "catalog", filepath.FromSlash(r.File()))); err != nil {
			t.Errorf("%s is not published: %v", r.Source, err)
		}
	}
}

// TestDiffFindsStaleAndChanged: the sync check fails for each way catalog/
// can drift.
func TestDiffFindsStaleAndChanged(t *testing.T) {
	files := map[string][]byte{"task/a/0.1/a.yaml": []byte("a\nb\n"), "README.md": []byte("x")}
	cases := []struct {
		name  string
		setup func(dir string)
		want  string
	}{
		{"changed", func(dir string) { write(t, dir, "task/a/0.1/a.yaml", "a\nc\n") }, `task/a/0.1/a.yaml: differs at line 2: have "c", want "b"`},
		{"missing", func(dir string) { os.Remove(filepath.Join(dir, "README.md")) }, "README.md: missing"},
		{"stale", func(dir string) { write(t, dir, "task/old/0.1/old.yaml", "x") }, "task/old/0.1/old.yaml: not generated (stale)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := Write(dir, files); err != nil {
				t.Fatal(err)
			}
			c.setup(dir)
			d, err := Diff(dir, files)
			if err != nil {
				t.Fatal(err)
			}
			if len(d) != 1 || d[0] != c.want {
				t.Fatalf("diff %q, want [%q]", d, c.want)
			}
		})
	}
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

var layoutRE = regexp.MustCompile(`^(task|pipeline)/([a-z0-9-]+)/([0-9]+\.[0-9]+)/(.+)$`)

// TestCatalogYAMLValid reads catalog/ as a consumer would, without the
// sources: every YAML sits at its TEP-0003 path and passes Tekton's
// defaulting and validation; every sample passes Tekton's validation and
// matches the resource beside it.
func TestCatalogYAMLValid(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(repoRoot, "catalog")
	resources := map[string]*Resource{} // by <kind>/<name>/<version>
	var samples []string
	var seen int
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasSuffix(rel, ArtifactHubRepoFile):
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var repo ArtifactHubRepo
			if err := yaml.UnmarshalStrict(b, &repo); err != nil {
				t.Errorf("%s: not Artifact Hub's repository metadata: %v", rel, err)
			}
			return nil
		case strings.HasSuffix(rel, ".md"), strings.Contains(rel, "/tests/"):
			// tests/ folders are hack/catalog/catlint's to check.
			return nil
		case !strings.HasSuffix(rel, ".yaml"):
			t.Errorf("%s: unexpected file in catalog/", rel)
			return nil
		}
		seen++
		m := layoutRE.FindStringSubmatch(rel)
		if m == nil {
			t.Errorf("%s: not under <kind>/<name>/<version>/", rel)
			return nil
		}
		kind, name, version, file := Kind(m[1]), m[2], m[3], m[4]
		if strings.HasPrefix(file, "samples/") {
			samples = append(samples, rel)
			return nil
		}
		if file != name+".yaml" {
			t.Errorf("%s: TEP-0003 wants <name>.yaml, %s.yaml", rel, name)
			return nil
		}
		r, err := loadOne(ctx, dir, p, kind)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		if r.Name != name || r.Meta.Version != version {
			t.Errorf("%s: holds %s version %s", rel, r.Name, r.Meta.Version)
		}
		if r.Task != nil {
			if err := pipeline.CheckKilnTask(r.Task); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
		}
		resources[path3(m)] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		m := layoutRE.FindStringSubmatch(s)
		r, ok := resources[path3(m)]
		if !ok {
			t.Errorf("%s: no resource beside the sample", s)
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(s)))
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateRun(ctx, b, r); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if len(resources) != len(loadRepo(t)) || len(samples) != len(resources) || seen == 0 {
		t.Errorf("catalog/ has %d resources and %d samples; tasks/ and pipelines/ have %d", len(resources), len(samples), len(loadRepo(t)))
	}
}

func path3(m []string) string { return m[1] + "/" + m[2] + "/" + m[3] }

// TestReadmesListEverything checks each published README's tables against
// the spec: every param, result and workspace has its row in its section.
func TestReadmesListEverything(t *testing.T) {
	for _, r := range loadRepo(t) {
		t.Run(r.Name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(repoRoot, "catalog", r.Dir(), "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			sections := readmeSections(string(b))
			want := map[string][]string{}
			if r.Task != nil {
				for _, p := range r.Task.Spec.Params {
					want["Parameters"] = append(want["Parameters"], p.Name)
				}
				for _, x := range r.Task.Spec.Results {
					want["Results"] = append(want["Results"], x.Name)
				}
				for _, w := range r.Task.Spec.Workspaces {
					want["Workspaces"] = append(want["Workspaces"], w.Name)
				}
			} else {
				for _, p := range r.Pipeline.Spec.Params {
					want["Parameters"] = append(want["Parameters"], p.Name)
				}
				for _, x := range r.Pipeline.Spec.Results {
					want["Results"] = append(want["Results"], x.Name)
				}
				for _, w := range r.Pipeline.Spec.Workspaces {
					want["Workspaces"] = append(want["Workspaces"], w.Name)
				}
				for _, pt := range append(r.Pipeline.Spec.Tasks, r.Pipeline.Spec.Finally...) {
					want["Tasks"] = append(want["Tasks"], pt.Name)
				}
			}
			for section, names := range want {
				body, ok := sections[section]
				if !ok {
					t.Errorf("README.md has no %q section", section)
					continue
				}
				for _, n := range names {
					if !strings.Contains(body, "| `"+n+"` |") {
						t.Errorf("README.md section %q has no row for %s", section, n)
					}
				}
			}
			for _, s := range []string{"Install", "Usage"} {
				if _, ok := sections[s]; !ok {
					t.Errorf("README.md has no %q section", s)
				}
			}
			if !strings.Contains(string(b), BundleRef(DefaultBundleRegistry, r)) {
				t.Errorf("README.md does not name the bundle %s", BundleRef(DefaultBundleRegistry, r))
			}
		})
	}
}

func readmeSections(s string) map[string]string {
	out := map[string]string{}
	parts := strings.Split(s, "\n## ")
	for _, p := range parts[1:] {
		title, body, _ := strings.Cut(p, "\n")
		out[title] = body
	}
	return out
}
