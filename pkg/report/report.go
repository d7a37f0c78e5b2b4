package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/pkg/safepath"
	"github.com/kiln-dev/kiln/pkg/work"
)

// Stages in pipeline order, as the summary lists them.
var Stages = []string{
	work.StageRender, work.StageKmodBuild, work.StageKmodSign, work.StageImageBuild,
	work.StageImageSign, work.StageVerify, stageReproduce, work.StageRollout, work.StageBootImages,
}

// Row is one stage in the summary.
type Row struct {
	Stage string `json:"stage"`
	// Status is Tekton's $(tasks.<name>.status): Succeeded, Failed or None
	// (skipped or not run); empty when unknown.
	Status string `json:"status"`
	Detail string `json:"detail"`
	// Cause is what a failed stage recorded as its error (work.Workspace
	// CausePath).
	Cause string `json:"cause,omitempty"`
}

// Collect builds one row per stage from the workspace. A report file that
// exists but cannot be read is an error; a missing one means the stage
// left nothing (skipped, or failed before writing).
func Collect(ws work.Workspace, status map[string]string) ([]Row, error) {
	var rows []Row
	var errs []error
	for _, s := range Stages {
		detail, err := details[s](ws)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading the %s report: %w", s, err))
		}
		if detail == "" && status[s] == "None" {
			detail = skippedForReuse(ws, s)
		}
		row := Row{Stage: s, Status: status[s], Detail: detail}
		if row.Status != "Succeeded" {
			row.Cause = ws.ReadCause(s)
		}
		rows = append(rows, row)
	}
	return rows, errors.Join(errs...)
}

// skippedForReuse says why the Pipeline skipped image-sign or verify
// when image-build reused an image it proved: empty otherwise.
func skippedForReuse(ws work.Workspace, stage string) string {
	var b work.BuildReport
	if ok, err := readJSON(ws.BuildReportPath(), &b); !ok || err != nil || !b.Reused {
		return ""
	}
	switch stage {
	case work.StageImageSign:
		return "not signed again: the reused image carries kiln's signature and an attestation of these inputs"
	case work.StageVerify:
		return "left to rollout, which checks the same policy before any write"
	}
	return ""
}

// stageReproduce is the optional reproduce stage; it works outside the
// work workspace (a fresh folder of its own), so its row has the status
// and, when it failed, nothing more: its log and DIFF result say what
// differed.
const stageReproduce = "reproduce"

var details = map[string]func(work.Workspace) (string, error){
	stageReproduce: func(work.Workspace) (string, error) { return "", nil },
	work.StageRender: func(ws work.Workspace) (string, error) {
		var mc mcfgv1.MachineConfig
		if ok, err := readJSON(ws.RenderedPath(), &mc); !ok || err != nil {
			return "", err
		}
		// The MachineConfigs merged, as render's log counts them: the
		// pool, the payload objects and the pool's current rendered config
		// (read to check reconcilability, not merged) are inputs too.
		var inputs []work.Input
		_, _ = readJSON(ws.InputsPath(), &inputs)
		mcs := 0
		for _, in := range inputs {
			if in.Kind == "MachineConfig" && in.Role != work.RoleCurrent {
				mcs++
			}
		}
		return fmt.Sprintf("%s from %d MachineConfigs; osImageURL %s", mc.Name, mcs, mc.Spec.OSImageURL), nil
	},
	work.StageKmodBuild: kmodDetail(work.KmodBuildFile),
	work.StageKmodSign:  kmodDetail(work.KmodSignFile),
	work.StageImageBuild: func(ws work.Workspace) (string, error) {
		var b work.BuildReport
		if ok, err := readJSON(ws.BuildReportPath(), &b); !ok || err != nil {
			return "", err
		}
		how := fmt.Sprintf("built %d entries on %s", len(b.Entries), b.Base)
		if b.Reused {
			how = "reused an identical build (fingerprint " + short(b.Fingerprint) + ")"
		}
		return b.Ref + ": " + how, nil
	},
	work.StageImageSign: func(ws work.Workspace) (string, error) {
		var r work.SignResult
		if ok, err := readJSON(ws.SignResultPath(), &r); !ok || err != nil {
			return "", err
		}
		return "signature " + r.SignatureRef + ", provenance " + r.AttestationRef, nil
	},
	work.StageVerify: func(ws work.Workspace) (string, error) {
		if _, err := os.Stat(filepath.Join(ws.StageDir(work.StageVerify), work.PolicyFile)); err != nil {
			return "", nil
		}
		return "policy fragment for nodes in image/policy.json and image/registries.d/", nil
	},
	work.StageRollout: func(ws work.Workspace) (string, error) {
		var tl []work.Event
		if ok, err := readJSON(ws.TimelinePath(), &tl); !ok || err != nil {
			return "", err
		}
		var d work.Drift
		if ok, err := readJSON(ws.DriftJSONPath(), &d); err != nil {
			return "", err
		} else if ok {
			return fmt.Sprintf("drift gate: MCO rendered %s, kiln predicted %s (see Conditions); %s", d.Rendered, d.Predicted, nodeSummary(tl)), nil
		}
		return nodeSummary(tl), nil
	},
	work.StageBootImages: func(ws work.Workspace) (string, error) {
		var r work.BootImageReport
		if ok, err := readJSON(ws.BootImageReportPath(), &r); !ok || err != nil {
			return "", err
		}
		reasons := map[string]int{}
		for _, s := range r.Skipped {
			reasons[s.Reason]++
		}
		return fmt.Sprintf("%d patched, %d up to date, %d skipped%s, %d failed of %d enrolled",
			len(r.Patched), len(r.UpToDate), len(r.Skipped), counts(reasons), len(r.Errors), r.Enrolled), nil
	},
}

func kmodDetail(file string) func(work.Workspace) (string, error) {
	return func(ws work.Workspace) (string, error) {
		var r work.KmodReport
		if ok, err := readJSON(filepath.Join(ws.StageDir(work.StageKmodSign), file), &r); !ok || err != nil {
			return "", err
		}
		d := r.Image
		if len(r.Signed) > 0 {
			d += fmt.Sprintf(" (%d modules signed for %s)", len(r.Signed), r.Kernel)
		}
		return d, nil
	}
}

// imageOf is the image the run built or reused, "" before image-build.
func imageOf(ws work.Workspace) string {
	var b work.BuildReport
	if ok, err := readJSON(ws.BuildReportPath(), &b); !ok || err != nil {
		return ""
	}
	return b.Ref
}

// nodesOf says how many nodes this run updated, "" when the rollout left
// no timeline. The rollout's first events for a node are its conditions
// as they stood when the watch began (rollout.Tracker.Observe), so an
// Updated=True there is a node already on its config, not one this run
// moved: drift-gate runs that stop before any node moves count none.
func nodesOf(ws work.Workspace) string {
	var tl []work.Event
	if ok, err := readJSON(ws.TimelinePath(), &tl); !ok || err != nil {
		return ""
	}
	n := 0
	for _, m := range movedNodes(tl) {
		if m {
			n++
		}
	}
	if n == 1 {
		return "1 node updated"
	}
	return fmt.Sprintf("%d nodes updated", n)
}

// movedNodes says, for every node in the timeline, whether this run
// updated it: its Updated condition was seen other than True (the update
// began, or was under way when the watch began) and then True.
func movedNodes(tl []work.Event) map[string]bool {
	pending := map[string]bool{}
	moved := map[string]bool{}
	for _, e := range tl {
		if _, ok := moved[e.Node]; !ok {
			moved[e.Node] = false
		}
		if e.Phase != phaseUpdated {
			continue
		}
		if e.Status != metav1.ConditionTrue {
			pending[e.Node] = true
		} else if pending[e.Node] {
			moved[e.Node] = true
		}
	}
	return moved
}

// phaseUpdated is the MachineConfigNode condition a node reaches when it
// runs its pool's desired config.
const phaseUpdated = string(mcfgv1.MachineConfigNodeUpdated)

// nodeSummary says where each node ended: the last parent phase it
// reached in this run, from the rollout timeline; a node that only ever
// showed Updated=True was on its config before the run and is unchanged.
func nodeSummary(tl []work.Event) string {
	moved := movedNodes(tl)
	last := map[string]string{}
	for _, e := range tl {
		if e.Phase == phaseUpdated && e.Status == metav1.ConditionTrue {
			last[e.Node] = "Updated"
		} else if e.Status != metav1.ConditionFalse {
			last[e.Node] = e.Phase + "=" + string(e.Status)
		}
	}
	for n, s := range last {
		if s == "Updated" && !moved[n] {
			last[n] = "unchanged"
		}
	}
	if len(last) == 0 {
		return "no node changed"
	}
	byState := map[string]int{}
	for _, s := range last {
		byState[s]++
	}
	return fmt.Sprintf("%d nodes:%s", len(last), counts(byState))
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// Markdown writes the summary table, for where Markdown is rendered (a
// GitOps pull request); log panes get Text. Every field is escaped (see
// safe).
func Markdown(w io.Writer, lead string, rows []Row) {
	lead, rows, _ = safe(lead, rows, nil)
	fmt.Fprintf(w, "## %s\n\n| stage | status | details |\n|---|---|---|\n", lead)
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s |\n", r.Stage, displayStatus(r.Status), strings.ReplaceAll(r.text(), "|", `\|`))
	}
}

// maxReportFile bounds a stage's report file: the largest is the rendered
// config, at most 1.5 MiB as MCO stores it and a few times that indented.
const maxReportFile = 32 << 20

// readJSON decodes path; ok is false when the file does not exist. Only a
// regular file is read, through maxReportFile.
func readJSON(path string, into any) (bool, error) {
	b, truncated, err := safepath.ReadRegular(path, maxReportFile)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if truncated {
		return false, fmt.Errorf("%s: larger than %d bytes", filepath.Base(path), maxReportFile)
	}
	if err := json.Unmarshal(b, into); err != nil {
		return false, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return true, nil
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
