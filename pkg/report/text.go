package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/kiln-dev/kiln/pkg/termsafe"
	"github.com/kiln-dev/kiln/pkg/textwrap"
)

// Width is the report's line budget: the Tekton Dashboard's and tkn's log
// panes show about 100 columns before they wrap.
const Width = 100

// Status words of the report. Tekton says None for a task whose when
// expressions skipped it or that never ran because an earlier one failed.
const (
	StatusSkipped = "Skipped"
	StatusUnknown = "-"
)

// displayStatus is the word a person reads for Tekton's task status.
func displayStatus(s string) string {
	switch s {
	case "":
		return StatusUnknown
	case "None":
		return StatusSkipped
	}
	return s
}

// Run is what the report's first line says about the run.
type Run struct {
	Pool string
	// Trigger and Changes are the run's trigger and changes params: why it
	// was made and what changed since the pool's previous run.
	Trigger, Changes string
	// Outcome is $(tasks.status).
	Outcome string
	// Image and Nodes are set when the run got that far.
	Image, Nodes string
}

// Lead is the report's first line: the pool, the trigger and what changed,
// the outcome and, when the run got that far, the image and the nodes.
// Text wraps it.
func Lead(r Run, rows []Row) string {
	parts := []string{"kiln: pool " + r.Pool}
	switch {
	case r.Trigger != "" && r.Changes != "":
		parts = append(parts, "trigger "+r.Trigger+": "+r.Changes)
	case r.Trigger != "":
		parts = append(parts, "trigger "+r.Trigger)
	case r.Changes != "":
		parts = append(parts, r.Changes)
	}
	parts = append(parts, leadOutcome(r.Outcome, rows))
	if r.Image != "" {
		parts = append(parts, "image "+r.Image)
	}
	if r.Nodes != "" {
		parts = append(parts, r.Nodes)
	}
	return strings.Join(parts, "; ")
}

// leadOutcome names the first failed stage: the aggregate alone
// ("Failed") does not say where.
func leadOutcome(outcome string, rows []Row) string {
	for _, r := range rows {
		if r.Status == "Failed" {
			return "Failed at " + r.Stage
		}
	}
	if outcome == "" {
		return "status unknown"
	}
	return outcome
}

// Text writes the summary as plain aligned text within Width columns for
// log panes: a failed stage's cause, wrapped, in its row. Every field is
// escaped (see safe).
func Text(w io.Writer, lead string, rows []Row, conds []Condition) {
	lead, rows, conds = safe(lead, rows, conds)
	for i, l := range wrap(lead, Width-2) {
		if i > 0 {
			l = "  " + l
		}
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
	stageW, statusW := len("STAGE"), len("STATUS")
	for _, r := range rows {
		stageW = max(stageW, len(r.Stage))
		statusW = max(statusW, len(displayStatus(r.Status)))
	}
	indent := stageW + 2 + statusW + 2
	fmt.Fprintf(w, "%-*s  %-*s  %s\n", stageW, "STAGE", statusW, "STATUS", "DETAILS")
	for _, r := range rows {
		var lines []string
		if r.Cause != "" {
			lines = wrap("error: "+r.Cause, Width-indent)
		}
		lines = append(lines, wrap(r.Detail, Width-indent)...)
		if len(lines) == 0 {
			lines = []string{""}
		}
		row := fmt.Sprintf("%-*s  %-*s  %s", stageW, r.Stage, statusW, displayStatus(r.Status), lines[0])
		fmt.Fprintln(w, strings.TrimRight(row, " "))
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%*s%s\n", indent, "", l)
		}
	}
	for _, c := range conds {
		fmt.Fprintln(w)
		for _, l := range wrap(fmt.Sprintf("%s=%s (%s): %s", c.Type, c.Status, c.Reason, c.Message), Width) {
			fmt.Fprintln(w, l)
		}
	}
}

// safe escapes every field of the summary (termsafe): the trigger and
// changes params, causes, image and object names and condition messages
// come from outside (a PipelineRun's params, a registry's error message, a
// cause file), and the summary is printed on terminals. Escaping at the
// two writers, Text and Markdown, covers every field whatever its source.
func safe(lead string, rows []Row, conds []Condition) (string, []Row, []Condition) {
	out := make([]Row, len(rows))
	for i, r := range rows {
		out[i] = Row{Stage: termsafe.Escape(r.Stage), Status: termsafe.Escape(r.Status),
			Detail: termsafe.Escape(r.Detail), Cause: termsafe.Escape(r.Cause)}
	}
	cs := make([]Condition, len(conds))
	for i, c := range conds {
		cs[i] = Condition{Type: termsafe.Escape(c.Type), Status: termsafe.Escape(c.Status),
			Reason: termsafe.Escape(c.Reason), Message: termsafe.Escape(c.Message)}
	}
	return termsafe.Escape(lead), out, cs
}

// text is the row's details in one line, led by the cause when the stage
// failed.
func (r Row) text() string {
	if r.Cause == "" {
		return r.Detail
	}
	if r.Detail == "" {
		return "error: " + r.Cause
	}
	return "error: " + r.Cause + " — " + r.Detail
}

// wrap is textwrap.Wrap, shared with the rollout log.
func wrap(s string, width int) []string { return textwrap.Wrap(s, width) }
