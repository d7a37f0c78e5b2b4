package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/kiln-dev/kiln/pkg/pipeline"
)

// Kind is a catalog kind, lower-case and singular as TEP-0003's top-level
// directories and Tekton's bundle annotation dev.tekton.image.kind spell it.
type Kind string

// The kinds kiln publishes.
const (
	KindTask     Kind = "task"
	KindPipeline Kind = "pipeline"
)

// Title is the Kubernetes kind: Task or Pipeline.
func (k Kind) Title() string { return strings.ToUpper(string(k[:1])) + string(k[1:]) }

// Resource is one published Task or Pipeline.
type Resource struct {
	Kind   Kind
	Name   string // metadata.name, e.g. kiln-render
	Source string // slash path relative to the repository root, e.g. tasks/render.yaml
	// Raw is the source file. The catalog publishes it byte for byte (comments
	// and layout included), so `kubectl apply` of the catalog file and of
	// tasks/ install the same object.
	Raw []byte
	// Tests is the resource's tests/ folder as tektoncd/catalog's CI runs
	// it (run.yaml, hooks), by file name, from <tasks|pipelines>/tests/<base>/
	// beside the source; nil when there is none.
	Tests map[string][]byte
	Meta  Metadata
	// Exactly one is set, as Tekton's defaulting left it.
	Task     *tektonv1.Task
	Pipeline *tektonv1.Pipeline
}

// Dir is the resource's TEP-0003 directory: <kind>/<name>/<version>.
func (r *Resource) Dir() string { return path.Join(string(r.Kind), r.Name, r.Meta.Version) }

// File is the catalog path of the resource's YAML.
func (r *Resource) File() string { return path.Join(r.Dir(), r.Name+".yaml") }

// Description is spec.description.
func (r *Resource) Description() string {
	if r.Task != nil {
		return r.Task.Spec.Description
	}
	return r.Pipeline.Spec.Description
}

// Load reads every tasks/*.yaml and pipelines/*.yaml under root, validates
// each with Tekton's defaulting and validation (pkg/pipeline), parses its
// catalog metadata, and checks each Pipeline against the Tasks. It reports
// every problem at once, each naming the file, and returns nothing when
// there is one: a catalog is never half generated. Resources come sorted by
// kind, then name.
func Load(ctx context.Context, root string) ([]*Resource, error) {
	var out []*Resource
	var errs []error
	for _, src := range []struct {
		dir  string
		kind Kind
	}{{"tasks", KindTask}, {"pipelines", KindPipeline}} {
		files, err := pipeline.SpecFiles(filepath.Join(root, src.dir))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			errs = append(errs, fmt.Errorf("%s: no *.yaml files under %s", src.dir, root))
		}
		sort.Strings(files)
		for _, f := range files {
			r, err := loadOne(ctx, root, f, src.kind)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, r)
		}
	}
	if err := checkSet(out); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind == KindTask
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func loadOne(ctx context.Context, root, file string, kind Kind) (*Resource, error) {
	rel, err := filepath.Rel(root, file)
	if err != nil {
		rel = file
	}
	r := &Resource{Kind: kind, Source: filepath.ToSlash(rel)}
	if r.Raw, err = os.ReadFile(file); err != nil {
		return nil, fmt.Errorf("reading %s: %w", r.Source, err)
	}
	if r.Tests, err = readTests(file); err != nil {
		return nil, err
	}
	var labels, annotations map[string]string
	var description string
	switch kind {
	case KindTask:
		t, err := pipeline.LoadTask(ctx, file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Source, err)
		}
		r.Task, r.Name = t, t.Name
		labels, annotations, description = t.Labels, t.Annotations, t.Spec.Description
	case KindPipeline:
		p, err := pipeline.LoadPipeline(ctx, file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Source, err)
		}
		r.Pipeline, r.Name = p, p.Name
		labels, annotations, description = p.Labels, p.Annotations, p.Spec.Description
	}
	var problems []string
	if r.Meta, err = ParseMetadata(labels, annotations); err != nil {
		problems = append(problems, err.Error())
	}
	if strings.TrimSpace(description) == "" {
		problems = append(problems, "spec.description is missing (TEP-0003: the catalog README and the hubs show it)")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s %s: %s", r.Source, kind.Title(), r.Name, strings.Join(problems, "; "))
	}
	return r, nil
}

// TestsDir is where the tests/ folder of the source file lives:
// tasks/render.yaml has tasks/tests/render/.
func TestsDir(source string) string {
	return filepath.Join(filepath.Dir(source), "tests", strings.TrimSuffix(filepath.Base(source), filepath.Ext(source)))
}

// readTests reads the regular files of the source's tests folder.
func readTests(source string) (map[string][]byte, error) {
	dir := TestsDir(source)
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("reading %s: %s is not a regular file (tests/ is flat, as tektoncd/catalog's)", dir, e.Name())
		}
		if e.Name() == RunHookFile {
			return nil, fmt.Errorf("reading %s: %s is generated into the catalog (pkg/catalog/hook.go); remove it here", dir, e.Name())
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", dir, err)
		}
		out[e.Name()] = b
	}
	return out, nil
}

// checkSet checks what only the whole set shows: names are unique within a
// kind (the catalog path is <kind>/<name>), and every Pipeline's tasks,
// params, workspaces and result references match the published Tasks.
func checkSet(rs []*Resource) error {
	var errs []error
	seen := map[string]string{}
	tasks := map[string]*tektonv1.Task{}
	for _, r := range rs {
		key := string(r.Kind) + "/" + r.Name
		if prev, ok := seen[key]; ok {
			errs = append(errs, fmt.Errorf("%s: %s %s is also defined in %s", r.Source, r.Kind.Title(), r.Name, prev))
		}
		seen[key] = r.Source
		if r.Task != nil {
			tasks[r.Name] = r.Task
		}
	}
	for _, r := range rs {
		if r.Pipeline == nil {
			continue
		}
		if err := pipeline.CheckPipelineTasks(r.Pipeline, tasks); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Source, err))
		}
	}
	return errors.Join(errs...)
}

// Select returns the resources with the given names (kind/name or name),
// in the order asked; an unknown name is an error listing what exists.
func Select(rs []*Resource, names ...string) ([]*Resource, error) {
	if len(names) == 0 {
		return rs, nil
	}
	var out []*Resource
	for _, n := range names {
		var match []*Resource
		for _, r := range rs {
			if n == r.Name || n == string(r.Kind)+"/"+r.Name {
				match = append(match, r)
			}
		}
		switch len(match) {
		case 0:
			return nil, fmt.Errorf("selecting %q: no Task or Pipeline of that name in tasks/ or pipelines/ (have %s)", n, names2(rs))
		case 1:
			out = append(out, match[0])
		default:
			return nil, fmt.Errorf("selecting %q: both a Task and a Pipeline have that name; say task/%s or pipeline/%s", n, n, n)
		}
	}
	return out, nil
}

func names2(rs []*Resource) string {
	var s []string
	for _, r := range rs {
		s = append(s, string(r.Kind)+"/"+r.Name)
	}
	return strings.Join(s, ", ")
}
