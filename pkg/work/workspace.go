package work

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Stage names, also the subcommands of kiln-steps and the folders of the work
// workspace.
const (
	StageRender     = "render"
	StageKmodBuild  = "kmod-build"
	StageKmodSign   = "kmod-sign"
	StageImageBuild = "image-build"
	StageImageSign  = "image-sign"
	StageVerify     = "verify"
	StageRollout    = "rollout"
	StageBootImages = "bootimages"
	StageReport     = "report"
)

// Results of the report stage, and so of the node-image Pipeline, that
// name the first stage that failed and its cause: the trigger's readiness
// and local mode read them.
const (
	ResultFailedStage = "FAILED_STAGE"
	ResultFailure     = "FAILURE"
)

// Workspace is the fixed layout of the "work" workspace shared by every task
// of a run (docs/architecture.md, "The work workspace"). Large data moves through it; small facts through
// results.
type Workspace struct {
	Root string
}

// RenderedPath is render's output: the rendered MachineConfig, a full object.
func (w Workspace) RenderedPath() string { return filepath.Join(w.Root, "render", "rendered.json") }

// InputsPath is render's record of every input: name, resourceVersion, spec hash.
func (w Workspace) InputsPath() string { return filepath.Join(w.Root, "render", "inputs.json") }

// ModuleDay0Path is render's copy of the ModuleDay0 that selects the pool,
// present only when one does; the kmod stages read it.
func (w Workspace) ModuleDay0Path() string { return filepath.Join(w.Root, "render", "moduleday0.json") }

// StageDir is the report folder of one stage: kmod/, image/, rollout/, bootimages/.
func (w Workspace) StageDir(stage string) string {
	switch stage {
	case StageKmodBuild, StageKmodSign:
		stage = "kmod"
	case StageImageBuild, StageImageSign, StageVerify:
		stage = "image"
	}
	return filepath.Join(w.Root, stage)
}

// Files of report in report/: the run's summary as text and as Markdown.
const (
	SummaryTextFile     = "summary.txt"
	SummaryMarkdownFile = "summary.md"
)

// Ensure creates the folder of a stage and returns it.
func (w Workspace) Ensure(stage string) (string, error) {
	if w.Root == "" {
		return "", fmt.Errorf("preparing workspace: --work is empty")
	}
	dir := w.StageDir(stage)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("preparing workspace folder %s: %w", dir, err)
	}
	return dir, nil
}

// KmodImage is what kmod-build and kmod-sign leave in kmod/ for
// image-build: the image (by digest) that becomes the layered image's base.
type KmodImage struct {
	Image  string `json:"image"`
	Digest string `json:"digest"`
}

// KmodImage returns the kmod image of this run: kmod-sign's output, else
// kmod-build's, else ok=false. image-build reads it from the workspace, not
// from task results: in Tekton a task that references a skipped task's
// results is skipped too, and the kmod tasks are skipped for pools without
// a ModuleDay0.
func (w Workspace) KmodImage() (KmodImage, bool, error) {
	for _, f := range []string{KmodSignFile, KmodBuildFile} {
		b, err := os.ReadFile(filepath.Join(w.StageDir(StageKmodSign), f))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return KmodImage{}, false, fmt.Errorf("reading kmod/%s: %w", f, err)
		}
		var k KmodImage
		if err := json.Unmarshal(b, &k); err != nil || k.Image == "" {
			return KmodImage{}, false, fmt.Errorf("reading kmod/%s: not a kmod report (%v)", f, err)
		}
		return k, true, nil
	}
	return KmodImage{}, false, nil
}
