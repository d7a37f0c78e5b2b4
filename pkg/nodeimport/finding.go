package nodeimport

import (
	"fmt"
	"strings"

	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// RulesVersion names this set of rules. It is recorded with every lint
// result kiln attests: bump it whenever a rule is added or changes what it
// accepts, so an attestation says which rules an image passed.
const RulesVersion = "kiln-nodeimport/1"

// Severity says whether a finding refuses the image.
type Severity string

const (
	// Error: a node fails to import the image, or imports it into
	// something other than what it says.
	Error Severity = "error"
	// Warning: the node imports the image but some content is lost or
	// behaves differently than in the container.
	Warning Severity = "warning"
)

// Rule names. Where bootc has a lint of the same concern the name is
// bootc's.
const (
	// Per entry, checked while a layer is read (ostree-ext's tar import).
	RuleUTF8       = "utf8"        // path or link target is not UTF-8
	RulePath       = "path"        // `..` component, empty name, NUL
	RuleNameLength = "name-length" // a component over 255 bytes or a path over 4096
	RuleFileType   = "file-type"   // device, fifo or other non-file entry
	RuleHardlink   = "hardlink"    // hard link whose target is not in the same layer
	RuleOwner      = "owner"       // uid or gid outside 0..4294967294
	RulePAXPathEtc = "pax-path-etc"
	// Over the whole image (bootc's lints).
	RuleKernel        = "kernel"
	RuleEtcUsrEtc     = "etc-usretc"
	RuleVarRun        = "var-run"
	RuleAPIDirs       = "api-base-directories"
	RuleVarTmpfiles   = "var-tmpfiles"
	RuleNonemptyRun   = "nonempty-run-tmp"
	RuleNonemptyBoot  = "nonempty-boot"
	RuleSysusers      = "sysusers"
	RuleDroppedFolder = "nonusr-dropped"
)

// Finding is one rule's verdict on one path of the image.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	// Path is the image path (absolute, as in the container) the finding
	// is about; it comes from the image and may hold any bytes.
	Path string `json:"path"`
	// Layer is the index of the layer the entry came from, -1 for a
	// finding about the merged image.
	Layer   int    `json:"layer"`
	Message string `json:"message"`
}

// String names the rule, the path and the reason, with control characters
// of the image's bytes escaped.
func (f Finding) String() string {
	where := ""
	if f.Layer >= 0 {
		where = fmt.Sprintf(" (layer %d)", f.Layer)
	}
	return fmt.Sprintf("%s [%s] %s%s: %s", f.Severity, f.Rule, termsafe.Escape(f.Path), where, termsafe.Escape(f.Message))
}

// Errors returns the findings of severity Error.
func Errors(fs []Finding) []Finding { return bySeverity(fs, Error) }

// Warnings returns the findings of severity Warning.
func Warnings(fs []Finding) []Finding { return bySeverity(fs, Warning) }

func bySeverity(fs []Finding, s Severity) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Severity == s {
			out = append(out, f)
		}
	}
	return out
}

// Summary is the lint result kiln records and attests for an image.
type Summary struct {
	Rules    string   `json:"rules"`
	Pass     bool     `json:"pass"`
	Errors   int      `json:"errors"`
	Warnings []string `json:"warnings,omitempty"`
}

// Summarize turns findings into the recorded result: it passes when no
// finding is an error.
func Summarize(fs []Finding) Summary {
	s := Summary{Rules: RulesVersion}
	for _, f := range fs {
		switch f.Severity {
		case Error:
			s.Errors++
		case Warning:
			s.Warnings = append(s.Warnings, f.String())
		}
	}
	s.Pass = s.Errors == 0
	return s
}

// RefusedError is the error of an image with error findings: it lists
// each one by rule and path.
type RefusedError struct {
	Findings []Finding
}

func (e *RefusedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the image fails %d node import rule(s) (%s)", len(e.Findings), RulesVersion)
	for i, f := range e.Findings {
		if i == 20 {
			fmt.Fprintf(&b, "; and %d more", len(e.Findings)-i)
			break
		}
		b.WriteString("; ")
		b.WriteString(f.String())
	}
	return b.String()
}

// Check returns a *RefusedError when any finding is an error, else nil.
func Check(fs []Finding) error {
	if errs := Errors(fs); len(errs) > 0 {
		return &RefusedError{Findings: errs}
	}
	return nil
}
