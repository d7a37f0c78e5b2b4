package catlint

import (
	"context"
	_ "embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	tektonscheme "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/catalog"
)

//go:embed hub-categories.yaml
var hubCategoriesYAML []byte

// HubCategories is Tekton Hub's category list (hub-categories.yaml).
func HubCategories() ([]string, error) {
	var f struct {
		Categories []string `json:"categories"`
	}
	if err := yaml.UnmarshalStrict(hubCategoriesYAML, &f); err != nil {
		return nil, fmt.Errorf("reading hub-categories.yaml: %w", err)
	}
	return f.Categories, nil
}

// Options are the facts the checks compare against.
type Options struct {
	// MinVersion is the only tekton.dev/pipelines.minVersion accepted: the
	// Tekton release the tests run on.
	MinVersion string
	// Categories are Tekton Hub's categories.
	Categories []string
}

// Resource is one catalog Task or Pipeline, decoded, defaulted and
// validated by Tekton.
type Resource struct {
	Rel      string // slash path under the catalog directory
	Task     *tektonv1.Task
	Pipeline *tektonv1.Pipeline
}

// Meta is the resource's ObjectMeta.
func (r *Resource) Meta() *metav1.ObjectMeta {
	if r.Task != nil {
		return &r.Task.ObjectMeta
	}
	return &r.Pipeline.ObjectMeta
}

// Kind is "task" or "pipeline", as TEP-0003 directories spell it.
func (r *Resource) Kind() string {
	if r.Task != nil {
		return "task"
	}
	return "pipeline"
}

// Ref names the resource in problems: "task/kiln-render (task/kiln-render/0.1/kiln-render.yaml)".
func (r *Resource) Ref() string { return r.Kind() + "/" + r.Meta().Name + " (" + r.Rel + ")" }

// Decoder is Tekton's scheme, with Kubernetes' built-in kinds for the
// Secrets and claims a tests/resources.yaml may hold, and strict decoding:
// an unknown or duplicate field is an error, as with the apiserver's
// strict field validation.
func Decoder() runtime.Decoder {
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(tektonscheme.AddToScheme(s))
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	return s
}()

// DecodeResource decodes one Task or Pipeline file, applies Tekton's
// defaults and runs Tekton's validation.
func DecodeResource(ctx context.Context, file, rel string) (*Resource, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	obj, _, err := Decoder().Decode(b, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: decoding with Tekton's scheme: %w", rel, err)
	}
	r := &Resource{Rel: rel}
	switch o := obj.(type) {
	case *tektonv1.Task:
		r.Task = o
		o.SetDefaults(ctx)
		if err := o.Validate(ctx); err != nil {
			return nil, fmt.Errorf("%s: Tekton's validation: %w", rel, err)
		}
	case *tektonv1.Pipeline:
		r.Pipeline = o
		o.SetDefaults(ctx)
		if err := o.Validate(ctx); err != nil {
			return nil, fmt.Errorf("%s: Tekton's validation: %w", rel, err)
		}
	default:
		return nil, fmt.Errorf("%s: %T is not a tekton.dev/v1 Task or Pipeline", rel, obj)
	}
	return r, nil
}

// LoadCatalog decodes every <kind>/<name>/<version>/<name>.yaml under dir.
// Files elsewhere are the layout check's business (CheckLayout).
func LoadCatalog(ctx context.Context, dir string) ([]*Resource, []error) {
	var rs []*Resource
	var errs []error
	for _, kind := range []string{"task", "pipeline"} {
		files, _ := filepath.Glob(filepath.Join(dir, kind, "*", "*", "*.yaml"))
		sort.Strings(files)
		for _, f := range files {
			rel, _ := filepath.Rel(dir, f)
			r, err := DecodeResource(ctx, f, filepath.ToSlash(rel))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: no <kind>/<name>/<version>/<name>.yaml found", dir))
	}
	return rs, errs
}

// Check runs every per-resource check and returns one error per problem,
// each naming the resource and the field.
func Check(ctx context.Context, dir string, r *Resource, o Options) []error {
	var errs []error
	add := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", r.Ref(), fmt.Sprintf(format, a...)))
	}
	for _, p := range checkPath(dir, r) {
		add("%s", p)
	}
	for _, p := range checkMetadata(r, o) {
		add("%s", p)
	}
	for _, p := range checkDescriptions(r) {
		add("%s", p)
	}
	for _, s := range steps(r) {
		for _, p := range checkStep(s) {
			add("%s", p)
		}
	}
	return errs
}

var versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)

// checkPath: TEP-0003's <kind>/<name>/<version>/<name>.yaml, the version
// being the label, with a README.md and at least one sample beside it.
func checkPath(dir string, r *Resource) []string {
	m := r.Meta()
	want := path.Join(r.Kind(), m.Name, m.Labels[catalog.LabelVersion], m.Name+".yaml")
	var out []string
	if r.Rel != want {
		out = append(out, fmt.Sprintf("resource path is %s, TEP-0003 wants %s", r.Rel, want))
	}
	rdir := filepath.Join(dir, filepath.FromSlash(path.Dir(r.Rel)))
	if fi, err := os.Stat(filepath.Join(rdir, "README.md")); err != nil || fi.Size() == 0 {
		out = append(out, "README.md beside the resource is missing or empty")
	}
	samples, _ := filepath.Glob(filepath.Join(rdir, "samples", "*.yaml"))
	if len(samples) == 0 {
		out = append(out, "samples/ beside the resource has no YAML")
	}
	return out
}

// checkMetadata: the label and annotations, each present and well formed.
func checkMetadata(r *Resource, o Options) []string {
	m := r.Meta()
	var out []string
	ann := func(k string) string { return fmt.Sprintf("metadata.annotations[%q]", k) }
	switch v := m.Labels[catalog.LabelVersion]; {
	case v == "":
		out = append(out, fmt.Sprintf("metadata.labels[%q] is missing", catalog.LabelVersion))
	case !versionRE.MatchString(v):
		out = append(out, fmt.Sprintf("metadata.labels[%q] %q: want <major>.<minor>", catalog.LabelVersion, v))
	}
	switch v := m.Annotations[catalog.AnnotationMinVersion]; {
	case v == "":
		out = append(out, ann(catalog.AnnotationMinVersion)+" is missing")
	case !semver(v):
		out = append(out, fmt.Sprintf("%s %q: not a semantic version", ann(catalog.AnnotationMinVersion), v))
	case v != o.MinVersion:
		out = append(out, fmt.Sprintf("%s %q: the tests prove Tekton %s only (hack/versions.sh TEKTON_VERSION)", ann(catalog.AnnotationMinVersion), v, o.MinVersion))
	}
	if strings.TrimSpace(m.Annotations[catalog.AnnotationDisplayName]) == "" {
		out = append(out, ann(catalog.AnnotationDisplayName)+" is missing")
	}
	known := map[string]bool{}
	for _, c := range o.Categories {
		known[c] = true
	}
	cats := split(m.Annotations[catalog.AnnotationCategories], ",")
	if len(cats) == 0 {
		out = append(out, ann(catalog.AnnotationCategories)+" is missing")
	}
	for _, c := range cats {
		if !known[c] {
			out = append(out, fmt.Sprintf("%s %q: not a Tekton Hub category", ann(catalog.AnnotationCategories), c))
		}
	}
	if len(split(m.Annotations[catalog.AnnotationTags], ", ")) == 0 {
		out = append(out, ann(catalog.AnnotationTags)+" is missing")
	}
	plats := split(m.Annotations[catalog.AnnotationPlatforms], ", ")
	if len(plats) == 0 {
		out = append(out, ann(catalog.AnnotationPlatforms)+" is missing")
	}
	for _, p := range plats {
		if msg := catalog.CheckPlatform(p); msg != "" {
			out = append(out, fmt.Sprintf("%s %q: %s", ann(catalog.AnnotationPlatforms), p, msg))
		}
	}
	return out
}

func semver(v string) bool {
	_, err := version.ParseSemantic(v)
	return err == nil
}

// split cuts s at any of the separator characters and drops empty items.
func split(s, seps string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(c rune) bool { return strings.ContainsRune(seps, c) }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// checkDescriptions: spec.description, and a description on every param,
// result and workspace, of the resource and of every Task embedded in a
// Pipeline.
// internalRef finds references to documents catalog users do not have:
// a path that leaves the resource's folder, a section number ("§3") of some
// design document, or a numbered design note.
var internalRef = regexp.MustCompile(`\.\./[^\s)]*|§ ?[0-9]+|\bseeds? ?0[0-9][0-9]\b`)

func checkDescriptions(r *Resource) []string {
	var out []string
	need := func(field, d string) {
		if strings.TrimSpace(d) == "" {
			out = append(out, field+": description is missing")
		}
		if m := internalRef.FindString(d); m != "" {
			out = append(out, fmt.Sprintf("%s: description refers to %q, a document users do not have; say it in their words", field, m))
		}
	}
	display := func(d string) {
		if strings.TrimSpace(d) == "" {
			out = append(out, "spec.displayName is missing (the Dashboard and tkn show it)")
		}
	}
	taskSpec := func(prefix string, s *tektonv1.TaskSpec) {
		for _, p := range s.Params {
			need(fmt.Sprintf("%sparams[%s]", prefix, p.Name), p.Description)
		}
		for _, x := range s.Results {
			need(fmt.Sprintf("%sresults[%s]", prefix, x.Name), x.Description)
		}
		for _, w := range s.Workspaces {
			need(fmt.Sprintf("%sworkspaces[%s]", prefix, w.Name), w.Description)
		}
	}
	if r.Task != nil {
		display(r.Task.Spec.DisplayName)
		need("spec", r.Task.Spec.Description)
		taskSpec("spec.", &r.Task.Spec)
		return out
	}
	ps := &r.Pipeline.Spec
	display(ps.DisplayName)
	need("spec", ps.Description)
	for _, p := range ps.Params {
		need(fmt.Sprintf("spec.params[%s]", p.Name), p.Description)
	}
	for _, x := range ps.Results {
		need(fmt.Sprintf("spec.results[%s]", x.Name), x.Description)
	}
	for _, w := range ps.Workspaces {
		need(fmt.Sprintf("spec.workspaces[%s]", w.Name), w.Description)
	}
	for _, pt := range append(append([]tektonv1.PipelineTask{}, ps.Tasks...), ps.Finally...) {
		if pt.TaskSpec != nil {
			taskSpec(fmt.Sprintf("spec.tasks[%s].taskSpec.", pt.Name), &pt.TaskSpec.TaskSpec)
		}
	}
	return out
}

// WalkYAML calls fn for every .yaml and .yml file under dir with its slash
// path relative to dir.
func WalkYAML(dir string, fn func(file, rel string) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		return fn(p, filepath.ToSlash(rel))
	})
}
