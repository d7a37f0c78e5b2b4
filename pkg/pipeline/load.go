package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	knativeapis "knative.dev/pkg/apis"
	"sigs.k8s.io/yaml"
)

// LoadTask reads one Tekton v1 Task, strictly (an unknown field is an
// error: the apiserver would keep it and Tekton would silently ignore it),
// applies Tekton's defaults and runs Tekton's validation.
func LoadTask(ctx context.Context, path string) (*tektonv1.Task, error) {
	return load(ctx, path, "Task", &tektonv1.Task{})
}

// LoadPipeline reads one Tekton v1 Pipeline like LoadTask.
func LoadPipeline(ctx context.Context, path string) (*tektonv1.Pipeline, error) {
	return load(ctx, path, "Pipeline", &tektonv1.Pipeline{})
}

// LoadPipelineRun reads one Tekton v1 PipelineRun (a sample, or a
// Pipelines-as-Code .tekton/ file) like LoadTask.
func LoadPipelineRun(ctx context.Context, path string) (*tektonv1.PipelineRun, error) {
	return load(ctx, path, "PipelineRun", &tektonv1.PipelineRun{})
}

// tektonObject is what Tekton's admission webhook does to an object.
type tektonObject interface {
	GetName() string
	SetDefaults(context.Context)
	Validate(context.Context) *knativeapis.FieldError
}

func load[T tektonObject](ctx context.Context, path, kind string, obj T) (T, error) {
	var none T
	if err := readStrict(path, kind, obj); err != nil {
		return none, err
	}
	obj.SetDefaults(ctx)
	if err := obj.Validate(ctx); err != nil {
		return none, fmt.Errorf("validating %s %s (%s): %w", kind, obj.GetName(), path, err)
	}
	return obj, nil
}

func readStrict(path, kind string, into any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", kind, err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		return fmt.Errorf("decoding %s %s: %w", kind, path, err)
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	_ = yaml.Unmarshal(b, &meta)
	if meta.APIVersion != "tekton.dev/v1" || meta.Kind != kind {
		return fmt.Errorf("decoding %s %s: apiVersion/kind is %s/%s, want tekton.dev/v1/%s", kind, path, meta.APIVersion, meta.Kind, kind)
	}
	return nil
}

// StepBinary is the command a kiln step runs, with the stage as its
// first argument.
const StepBinary = "kiln-steps"

// StageBinaries map the stages that ship a binary of their own, beside
// kiln-steps in the steps image, to the kiln-steps subcommand each runs
// alone: the same flags, results and messages, and a faster start, since
// it links no other stage. Its step passes the flags only.
var StageBinaries = map[string]string{"kiln-image-build": "image-build"}

// stageStep reports whether s runs kiln's step binary: kiln-steps with
// the subcommand as first argument, or a stage's own binary.
func stageStep(s tektonv1.Step) bool {
	if len(s.Command) != 1 {
		return false
	}
	if _, ok := StageBinaries[s.Command[0]]; ok {
		return true
	}
	return s.Command[0] == StepBinary && len(s.Args) > 0
}

// CheckKilnTask checks kiln's conventions for a Task in tasks/: every step
// runs `kiln-steps <subcommand>` or a stage's own binary (StageBinaries;
// no inline scripts), the Task declares
// the results its stage promises, no step names a workspace isolated to
// other steps, and no step that runs user code mounts a key.
func CheckKilnTask(t *tektonv1.Task) error {
	var problems []string
	for i, s := range t.Spec.Steps {
		if s.Script != "" {
			problems = append(problems, fmt.Sprintf("steps[%d] (%s): inline script; run %s instead", i, s.Name, StepBinary))
		}
		if !stageStep(s) {
			problems = append(problems, fmt.Sprintf("steps[%d] (%s): command must be [%s] with the subcommand as first arg", i, s.Name, StepBinary))
		}
	}
	declared := map[string]bool{}
	for _, r := range t.Spec.Results {
		declared[r.Name] = true
	}
	for _, want := range ContractResults[strings.TrimPrefix(t.Name, "kiln-")] {
		if !declared[want] {
			problems = append(problems, fmt.Sprintf("result %s that kiln-steps writes is not declared", want))
		}
	}
	for _, check := range []func(*tektonv1.Task) error{CheckIsolatedWorkspaces, CheckKeysIsolated} {
		if err := check(t); err != nil {
			problems = append(problems, strings.TrimPrefix(err.Error(), "Task "+t.Name+": "))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("Task %s: %s", t.Name, strings.Join(problems, "; "))
	}
	return nil
}

// ContractResults are the results each stage's Task must declare (DESIGN
// §3). Names follow Tekton Chains' type hints so Chains signs without setup.
var ContractResults = map[string][]string{
	"render":      {"RENDERED_NAME", "CONFIG_HASH", "BASE_IMAGE", "HAS_KMOD", "KMOD_BUILD", "KMOD_SIGN"},
	"kmod-build":  {"KMOD_IMAGE_URL", "KMOD_IMAGE_DIGEST", "REUSED", "REUSE_REJECTED"},
	"kmod-sign":   {"KMOD_IMAGE_URL", "KMOD_IMAGE_DIGEST", "REUSED", "REUSE_REJECTED"},
	"image-build": {"IMAGE_URL", "IMAGE_DIGEST", "REUSED", "REUSE_REJECTED", "BASE_IMAGE_ARTIFACT_INPUTS"},
	"image-sign":  {"SIGNATURE_REF", "ATTESTATION_REF"},
	"verify":      {"VERIFIED"},
	"rollout":     {"ROLLOUT_STATE", "UPDATED_NODES"},
	"bootimages":  {"MACHINESETS_PATCHED", "MACHINESETS_SKIPPED"},
	"report":      {"FAILED_STAGE", "FAILURE"},
}

// SpecFiles lists the Tekton YAML files of a folder such as tasks/ or
// pipelines/, sorted: every *.yaml except the kustomization.yaml through
// which config/ installs them.
func SpecFiles(dir string) ([]string, error) {
	all, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var out []string
	for _, p := range all {
		if filepath.Base(p) != "kustomization.yaml" {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}
