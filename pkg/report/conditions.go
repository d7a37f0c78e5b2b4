package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/kiln-dev/kiln/pkg/work"
)

// Condition is one fact the summary states under its table, in the manner
// of a Kubernetes condition: the run's report is where a PipelineRun's
// outcome is read.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// ConditionDriftDetected: the rollout's drift gate found MCO's rendered
// config different from kiln's prediction (rollout/drift.json).
const ConditionDriftDetected = "DriftDetected"

// Conditions reads the conditions the stages left in the workspace.
func Conditions(ws work.Workspace) ([]Condition, error) {
	var d work.Drift
	ok, err := readJSON(ws.DriftJSONPath(), &d)
	if err != nil || !ok {
		return nil, err
	}
	msg := fmt.Sprintf("pool %s: MCO rendered %s, kiln predicted %s: %s. Diff: rollout/%s (rollout/%s).",
		d.Pool, d.Rendered, d.Predicted, d.Cause, work.DriftText, work.DriftJSON)
	reason := "RenderedConfigDiffers"
	if d.SpecsEqual {
		reason = "RenderedNameDiffers"
	}
	return []Condition{{Type: ConditionDriftDetected, Status: "True", Reason: reason, Message: msg}}, nil
}

// MarkdownConditions writes the conditions under the table.
func MarkdownConditions(w io.Writer, conds []Condition) {
	if len(conds) == 0 {
		return
	}
	_, _, conds = safe("", nil, conds)
	fmt.Fprintf(w, "\n### Conditions\n\n")
	for _, c := range conds {
		fmt.Fprintf(w, "- **%s=%s** (%s): %s\n", c.Type, c.Status, c.Reason, strings.ReplaceAll(c.Message, "\n", " "))
	}
}
