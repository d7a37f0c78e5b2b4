package pipeline

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteTable prints the run as one row per task (finally last) and a
// status line: what `kiln-trigger --once` shows at the end of a local run.
func (r *RunResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTATUS\tREASON\tDURATION\tATTEMPTS\tRESULTS")
	for _, t := range r.Tasks {
		name := t.Name
		if t.Finally {
			name += " (finally)"
		}
		reason := t.Reason
		if reason == t.Status {
			reason = ""
		}
		dur, attempts := "-", "-"
		if t.Attempts > 0 {
			dur, attempts = t.Duration.Round(time.Millisecond).String(), fmt.Sprint(t.Attempts)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, orDash(t.Status), orDash(reason), dur, attempts, orDash(summarize(t.Results)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	line := fmt.Sprintf("PipelineRun %s: %s in %s", r.RunName, r.Status, r.Duration.Round(time.Millisecond))
	if r.FailedTask != "" {
		line += fmt.Sprintf(" (task %s: %s)", r.FailedTask, r.Message)
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
