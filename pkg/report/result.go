package report

import "github.com/kiln-dev/kiln/pkg/termsafe"

// Summary is the report as data: what `kiln-steps report -o json`
// prints. Every string is escaped as in the text summary (safe), so a
// script that prints a field prints nothing a terminal would act on.
type Summary struct {
	Pool    string `json:"pool"`
	Outcome string `json:"outcome,omitempty"`
	// Lead is the summary's first line: the pool, the trigger, what
	// changed, the outcome, the image and the nodes updated.
	Lead   string `json:"lead"`
	Stages []Row  `json:"stages"`
	// FailedStage and Failure are the FAILED_STAGE and FAILURE results.
	FailedStage string      `json:"failedStage,omitempty"`
	Failure     string      `json:"failure,omitempty"`
	Conditions  []Condition `json:"conditions,omitempty"`
}

// Result returns the summary of the last Run, or nil before one
// succeeded (cmd/cli prints it with -o json).
func (o *Options) Result() any {
	if o.summary == nil {
		return nil
	}
	return o.summary
}

func newSummary(o *Options, lead string, rows []Row, conds []Condition) *Summary {
	stage, cause := failed(rows) // escapes the cause itself
	lead, rows, conds = safe(lead, rows, conds)
	return &Summary{Pool: termsafe.Escape(o.Pool), Outcome: termsafe.Escape(o.Aggregate), Lead: lead, Stages: rows,
		FailedStage: termsafe.Escape(stage), Failure: cause, Conditions: conds}
}
