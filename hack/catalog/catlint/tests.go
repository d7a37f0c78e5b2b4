package catlint

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The hooks tektoncd/catalog's CI sources from a tests/ folder: the first
// before it creates the resource (TMPF is a copy of the resource), the
// second before it creates each tests/*.yaml (TMPF is a copy of that file).
const (
	TaskHook = "pre-apply-task-hook.sh"
	RunHook  = "pre-apply-taskrun-hook.sh"
)

// E2EValues are the variables kiln's e2e exports for the hooks, as names;
// the hooks replace @NAME@ in the tests/ files with their values.
var E2EValues = []string{"KILN_E2E_STEPS_IMAGE", "KILN_E2E_REGISTRY", "KILN_E2E_IMAGE", "KILN_E2E_DTK_IMAGE"}

var placeholderRE = regexp.MustCompile(`@([A-Z0-9_]+)@`)

// TestFile is one tests/*.yaml after its hook ran, decoded with Tekton's
// scheme.
type TestFile struct {
	Name string
	Docs []Doc
}

// Doc is one document of a tests/ file after the hook: Raw as the CI
// creates it, Object as Tekton defaulted and validated it.
type Doc struct {
	Raw    []byte
	Object runtime.Object
}

// PrepareTests does what the catalog's CI does to a tests/ folder before it
// creates anything, on copies: runs the run hook on each tests/*.yaml with
// env, then decodes each with Tekton's scheme, defaults and validates every
// Tekton object. A placeholder left after the hook is an error.
func PrepareTests(ctx context.Context, testsDir string, env []string) ([]TestFile, error) {
	files, err := filepath.Glob(filepath.Join(testsDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no *.yaml (want run.yaml)", testsDir)
	}
	sort.Strings(files)
	tmp, err := os.MkdirTemp("", "kiln-catalog-test-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var out []TestFile
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		tmpf := filepath.Join(tmp, filepath.Base(f))
		if err := os.WriteFile(tmpf, b, 0o644); err != nil {
			return nil, err
		}
		if err := SourceHook(filepath.Join(testsDir, RunHook), tmpf, env); err != nil {
			return nil, err
		}
		if b, err = os.ReadFile(tmpf); err != nil {
			return nil, err
		}
		if m := placeholderRE.FindSubmatch(b); m != nil {
			return nil, fmt.Errorf("%s: @%s@ is left after %s", f, m[1], RunHook)
		}
		docs, err := DecodeTestFile(ctx, b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, TestFile{Name: filepath.Base(f), Docs: docs})
	}
	return out, nil
}

// SourceHook sources hook with bash, as the catalog's CI does, with TMPF
// set to file and env added; a missing hook does nothing.
func SourceHook(hook, file string, env []string) error {
	if _, err := os.Stat(hook); os.IsNotExist(err) {
		return nil
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", `source "$1"`, "hook", hook)
	cmd.Env = append(append(os.Environ(), env...), "TMPF="+file)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("sourcing %s on %s: %w\n%s", hook, filepath.Base(file), err, out)
	}
	return nil
}

// DecodeTestFile decodes every document of a tests/ file with Tekton's
// scheme (strict); Tekton objects get Tekton's defaults and validation.
func DecodeTestFile(ctx context.Context, data []byte) ([]Doc, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []Doc
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 || string(bytes.TrimSpace(stripComments(raw))) == "---" {
			continue
		}
		obj, _, err := Decoder().Decode(raw, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: decoding with Tekton's scheme: %w", doc, err)
		}
		out = append(out, Doc{Raw: raw})
		if v, ok := obj.(interface {
			SetDefaults(context.Context)
		}); ok {
			v.SetDefaults(ctx)
		}
		if err := validate(ctx, obj); err != nil {
			return nil, fmt.Errorf("document %d: Tekton's validation: %w", doc, err)
		}
		out[len(out)-1].Object = obj
	}
	return out, nil
}

func validate(ctx context.Context, obj runtime.Object) error {
	var err error
	switch o := obj.(type) {
	case *tektonv1.TaskRun:
		if o.Name == "" {
			o.Name = o.GenerateName + "x7k2q" // the apiserver's generated name
		}
		if fe := o.Validate(ctx); fe != nil {
			err = fe
		}
	case *tektonv1.PipelineRun:
		if o.Name == "" {
			o.Name = o.GenerateName + "x7k2q"
		}
		if fe := o.Validate(ctx); fe != nil {
			err = fe
		}
	case *tektonv1.Task:
		if fe := o.Validate(ctx); fe != nil {
			err = fe
		}
	case *tektonv1.Pipeline:
		if fe := o.Validate(ctx); fe != nil {
			err = fe
		}
	}
	return err
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] == '#' {
			continue
		}
		out = append(out, l)
	}
	return bytes.Join(out, []byte("\n"))
}

// References says whether a run in a tests/ file runs the resource: a
// TaskRun of the Task, a PipelineRun of the Pipeline, or a PipelineRun
// whose inline Pipeline has a task that references the Task.
func References(obj runtime.Object, r *Resource) bool {
	name := r.Meta().Name
	switch o := obj.(type) {
	case *tektonv1.TaskRun:
		return r.Task != nil && o.Spec.TaskRef != nil && o.Spec.TaskRef.Name == name
	case *tektonv1.PipelineRun:
		if r.Pipeline != nil {
			return o.Spec.PipelineRef != nil && o.Spec.PipelineRef.Name == name
		}
		if o.Spec.PipelineSpec == nil {
			return false
		}
		for _, pt := range append(append([]tektonv1.PipelineTask{}, o.Spec.PipelineSpec.Tasks...), o.Spec.PipelineSpec.Finally...) {
			if pt.TaskRef != nil && pt.TaskRef.Name == name {
				return true
			}
		}
	}
	return false
}
