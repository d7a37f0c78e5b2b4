package step

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
)

// Pending is the Runner of a stage whose implementation has not landed yet.
// It accepts the shared flags, so the Task YAML can already be written
// against it, and fails naming the issue that brings the stage: a pipeline
// must never believe a stage ran when it did not.
func Pending(name, issue string) func() Runner {
	return func() Runner { return &pending{name: name, issue: issue} }
}

type pending struct {
	Options
	name, issue string
}

func (p *pending) AddFlags(fs *pflag.FlagSet) { p.Options.AddFlags(fs) }

func (p *pending) Run(context.Context, Streams) error {
	return fmt.Errorf("stage %s is not available in this build (it lands with issue %s)", p.name, p.issue)
}
