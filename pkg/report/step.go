package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/taskresult"
	"github.com/kiln-dev/kiln/pkg/termsafe"
	"github.com/kiln-dev/kiln/pkg/work"
)

// Options are the flags of `kiln-steps report`.
type Options struct {
	step.Options
	// Statuses are stage=status pairs from $(tasks.<name>.status).
	Statuses []string
	// Aggregate is $(tasks.status): Succeeded, Failed, Completed or None.
	Aggregate string
	// Trigger and Changes say why the run was made and what changed (the
	// pipeline's params of those names).
	Trigger, Changes string

	summary *Summary
}

// DefaultOptions returns report's options with their defaults.
func DefaultOptions() *Options { return &Options{Options: step.DefaultOptions()} }

// Validate reports every bad flag at once: the shared flags and every
// --status that is not stage=status.
func (o *Options) Validate() error {
	errs := []error{o.Options.Validate()}
	for _, kv := range o.Statuses {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			errs = append(errs, fmt.Errorf("--status %q: want stage=status", kv))
		}
	}
	return exitcode.ValidationErrors(errs...)
}

// Run prints the summary as text and writes it to report/summary.txt and,
// as Markdown, to report/summary.md. It does not fail the run
// for a failed stage: the stage's own task already did, and a report that
// fails would hide the summary.
func (o *Options) Run(_ context.Context, s step.Streams) error {
	if err := o.Validate(); err != nil {
		return err
	}
	status := map[string]string{}
	for _, kv := range o.Statuses {
		k, v, _ := strings.Cut(kv, "=")
		status[k] = v
	}
	ws := o.Workspace()
	rows, err := Collect(ws, status)
	if err != nil {
		return err
	}
	conds, err := Conditions(ws)
	if err != nil {
		return err
	}
	lead := Lead(Run{Pool: o.Pool, Trigger: o.Trigger, Changes: o.Changes, Outcome: o.Aggregate,
		Image: imageOf(ws), Nodes: nodesOf(ws)}, rows)
	var md, text bytes.Buffer
	Markdown(&md, lead, rows)
	MarkdownConditions(&md, conds)
	Text(&text, lead, rows, conds)
	dir, err := ws.Ensure(work.StageReport)
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{work.SummaryMarkdownFile: md.Bytes(), work.SummaryTextFile: text.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("writing the summary: %w", err)
		}
	}
	o.summary = newSummary(o, lead, rows, conds)
	if _, err := s.Out.Write(text.Bytes()); err != nil {
		return err
	}
	return writeResults(o.Results(), rows)
}

// MaxFailure bounds the FAILURE result: all of report's results share
// Tekton's 4 KiB termination message.
const MaxFailure = 1500

// writeResults gives the run level what an operator needs first: which
// stage failed and why (the pipeline's FAILED_STAGE and FAILURE results
// come from these).
func writeResults(res *taskresult.Results, rows []Row) error {
	stage, cause := failed(rows)
	if err := res.Set("FAILED_STAGE", stage); err != nil {
		return err
	}
	if err := res.Set("FAILURE", cause); err != nil {
		return err
	}
	return res.Write()
}

// failed is the first failed stage and its cause, escaped and cut to
// MaxFailure (escaped before it is cut, so that the cut result still
// fits).
func failed(rows []Row) (stage, cause string) {
	for _, r := range rows {
		if r.Status == "Failed" {
			stage, cause = r.Stage, r.Cause
			break
		}
	}
	cause = termsafe.Escape(cause)
	if r := []rune(cause); len(r) > MaxFailure {
		cause = string(r[:MaxFailure-1]) + "…"
	}
	return stage, cause
}
