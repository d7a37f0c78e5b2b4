package catalog

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// imageValues walks a decoded YAML value and returns every image a run
// would pull, as "where: value": a field named image or ending in Image,
// and the value or default of a param whose name is base or ends in image.
// A string that is itself YAML (a ConfigMap's data, kiln-config's params)
// is walked too.
func imageValues(where string, v any) []string {
	var out []string
	switch t := v.(type) {
	case map[string]any:
		if n, ok := t["name"].(string); ok && (n == "base" || strings.HasSuffix(n, "image")) {
			for _, k := range []string{"value", "default"} {
				if s, ok := t[k].(string); ok {
					out = append(out, where+"."+n+"."+k+": "+s)
				}
			}
		}
		for k, c := range t {
			if s, ok := c.(string); ok && (k == "image" || strings.HasSuffix(k, "Image") || strings.HasSuffix(k, "-image")) {
				out = append(out, where+"."+k+": "+s)
				continue
			}
			if s, ok := c.(string); ok && strings.Contains(s, "\n") {
				var nested any
				if yaml.Unmarshal([]byte(s), &nested) == nil {
					out = append(out, imageValues(where+"."+k, nested)...)
				}
				continue
			}
			out = append(out, imageValues(where+"."+k, c)...)
		}
	case []any:
		for _, c := range t {
			out = append(out, imageValues(where, c)...)
		}
	}
	return out
}

// unpinned returns the image values that are not digest references; an
// empty value (the Task's own default) or a value filled in later (Tekton
// $(...), Pipelines-as-Code {{ }}, a tests/ placeholder whose hook falls
// back to the pinned default: TestRunHookUnderCatalogRunner) is not an
// image yet.
func unpinned(values []string) []string {
	var out []string
	for _, wv := range values {
		v := strings.TrimSpace(wv[strings.Index(wv, ": ")+2:])
		if v == "" || strings.Contains(v, "$(") || strings.Contains(v, "{{") || strings.HasPrefix(v, "@KILN_E2E_") {
			continue
		}
		if _, err := name.NewDigest(v); err != nil {
			out = append(out, wv)
		}
	}
	sort.Strings(out)
	return out
}

func yamlDocs(t *testing.T, file string) []any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out []any
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var v any
		if err := yaml.Unmarshal(doc, &v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, v)
	}
}

// TestSamplesPinImagesByDigest: every image a sample names (config/samples:
// kiln-config, the GitOps Pipeline, Triggers and Pipelines-as-Code; the
// catalog's samples/ and tests/ runs; every Task and Pipeline default) is
// a digest reference, so no sample un-pins the steps image.
func TestSamplesPinImagesByDigest(t *testing.T) {
	var files []string
	for _, dir := range []string{"config/samples", "catalog", "tasks", "pipelines"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ".yaml") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var all, bad []string
	var steps int
	for _, f := range files {
		rel, _ := filepath.Rel(repoRoot, f)
		for _, d := range yamlDocs(t, f) {
			vs := imageValues(filepath.ToSlash(rel), d)
			all = append(all, vs...)
			bad = append(bad, unpinned(vs)...)
			for _, v := range vs {
				if strings.Contains(v, "kiln-steps") {
					steps++
				}
			}
		}
	}
	if diff := cmp.Diff([]string(nil), bad); diff != "" {
		t.Errorf("images not pinned by digest (-want +got):\n%s", diff)
	}
	// The walk must reach the steps image defaults, or it proves nothing.
	if steps < 12 {
		t.Errorf("found the kiln-steps image %d times among %d image values, want every Task's and Pipeline's default", steps, len(all))
	}
}

// TestUnpinnedFindsTagOnly: the check above catches a tag-only steps image
// in a param value, in kiln-config's embedded params and in a step image.
func TestUnpinnedFindsTagOnly(t *testing.T) {
	var doc any
	in := `
data:
  params: |
    kiln-image: ghcr.io/kiln-dev/kiln-steps:v0.1.0
spec:
  params:
    - {name: kiln-image, value: "ghcr.io/kiln-dev/kiln-steps:v0.1.0"}
    - {name: dtk-image, value: ""}
    - {name: base, value: "$(params.base)"}
  steps:
    - image: quay.io/x/y@sha256:` + zeros + `
    - image: quay.io/x/y:latest
`
	if err := yaml.Unmarshal([]byte(in), &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"f.data.params.kiln-image: ghcr.io/kiln-dev/kiln-steps:v0.1.0",
		"f.spec.params.kiln-image.value: ghcr.io/kiln-dev/kiln-steps:v0.1.0",
		"f.spec.steps.image: quay.io/x/y:latest",
	}
	if diff := cmp.Diff(want, unpinned(imageValues("f", doc))); diff != "" {
		t.Errorf("unpinned (-want +got):\n%s", diff)
	}
}
