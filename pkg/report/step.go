package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/pkg/step"
)

// Options are the flags of `kiln-steps report`.
type Options struct {
	step.Options
	// Statuses are stage=status pairs from $(tasks.<name>.status).
	Statuses []string
	// Aggregate is $(tasks.status): Succeeded, Failed, Completed or None.
	Aggregate string
}

// AddFlags registers report's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Options.AddFlags(fs)
	fs.StringArrayVar(&o.Statuses, "status", nil, "stage=status from $(tasks.<name>.status) (repeatable; also accepted as arguments)")
	fs.StringVar(&o.Aggregate, "aggregate", "", "the run's $(tasks.status)")
}

// SetArgs takes stage=status pairs as arguments, as the Task passes its
// statuses array.
func (o *Options) SetArgs(args []string) error {
	o.Statuses = append(o.Statuses, args...)
	return nil
}

// Run writes report/summary.md and prints it. It does not fail the run
// for a failed stage: the stage's own task already did, and a report that
// fails would hide the summary.
func (o *Options) Run(_ context.Context, s step.Streams) error {
	if err := o.Validate(); err != nil {
		return err
	}
	status := map[string]string{}
	for _, kv := range o.Statuses {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return &step.UsageError{Err: fmt.Errorf("--status %q: want stage=status", kv)}
		}
		status[k] = v
	}
	ws := o.Workspace()
	rows, err := Collect(ws, status)
	if err != nil {
		return err
	}
	outcome := o.Aggregate
	if outcome == "" {
		outcome = "status unknown"
	}
	conds, err := Conditions(ws)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	Markdown(&buf, o.Pool, outcome, rows)
	MarkdownConditions(&buf, conds)
	dir, err := ws.Ensure(step.StageReport)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.md"), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing summary: %w", err)
	}
	_, err = s.Out.Write(buf.Bytes())
	return err
}
