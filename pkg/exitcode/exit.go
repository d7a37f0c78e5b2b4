package exitcode

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Exit codes of kiln-steps and the trigger, in the manner of Tekton's
// entrypoint: the error a command returns decides its code. A Task (or a
// user's script) tells the cases apart by the step's exit code, so the
// codes are fixed: a new one is added at the end of ExitCodes, never
// renumbered.
const (
	ExitOK              = 0
	ExitFailure         = 1
	ExitUsage           = 2
	ExitRefused         = 3
	ExitRolledBack      = 4
	ExitInputRejected   = 5
	ExitDrift           = 6
	ExitNotReproducible = 7
)

// ExitCode is one row of the exit-code table.
type ExitCode struct {
	Code    int
	Name    string
	Meaning string
}

// ExitCodes is the one table both binaries print in --help and README
// shows. There is no "nothing to do" code: a stage with nothing to do
// (a reused image, an unchanged rollout, no MachineSet to patch) still
// succeeds and writes its results, because any non-zero code fails the
// Task and stops the pipeline.
var ExitCodes = []ExitCode{
	{ExitOK, "ok", "success"},
	{ExitFailure, "failure", "the command failed: a registry or cluster gave no answer (unreachable, 401/403, 404, 429, 5xx, timeout), or a build or I/O error"},
	{ExitUsage, "usage", "bad command line: unknown command, flag, help topic or shell; malformed flag value or image reference; missing required flag; extra argument"},
	{ExitRefused, "verification refused", "a check ran and the image failed it: the signature policy (verify, or rollout before any write), or no kiln attestation to rebuild from (reproduce); never a registry that did not answer"},
	{ExitRolledBack, "rolled back", "rollout failed and the pool was rolled back to its previous image"},
	{ExitInputRejected, "input rejected", "an input object failed validation (strict decoding, unknown field, bad label or spec)"},
	{ExitDrift, "drift detected", "MCO rendered a config other than the one kiln predicted and baked; rollout stopped before any node moved and took its MachineConfig back (rollout's drift gate)"},
	{ExitNotReproducible, "not reproducible", "a rebuild from the image's attested inputs gave another digest; the differing layers and files are printed (reproduce)"},
}

// ExitCoder is an error that decides its command's exit code.
type ExitCoder interface {
	ExitCode() int
}

// CodeOf returns the exit code for err: 0 for nil, the code of the first
// ExitCoder in its chain, else ExitFailure.
func CodeOf(err error) int {
	if err == nil {
		return ExitOK
	}
	var c ExitCoder
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	return ExitFailure
}

// WriteExitCodes prints the table as aligned text (for --help).
func WriteExitCodes(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range ExitCodes {
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", c.Code, c.Name, c.Meaning)
	}
	_ = tw.Flush()
}

// ExitCodesMarkdown returns the table as Markdown (for README).
func ExitCodesMarkdown() string {
	var b strings.Builder
	b.WriteString("| code | name | meaning |\n|---|---|---|\n")
	for _, c := range ExitCodes {
		fmt.Fprintf(&b, "| %d | %s | %s |\n", c.Code, c.Name, c.Meaning)
	}
	return b.String()
}

// UsageError is a bad command line; it exits with ExitUsage.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// ExitCode implements ExitCoder.
func (e *UsageError) ExitCode() int { return ExitUsage }

// codedError gives err a fixed exit code.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }
func (e *codedError) ExitCode() int { return e.code }

func coded(code int, err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code: code, err: err}
}

// Refused marks err as a failed signature, attestation, policy or proof
// check (ExitRefused). A fault (IsFault: unreachable registry, refused
// credentials, 5xx, timeout) is left a failure (ExitFailure) even when a
// check returned it: the check never got its answer, so nothing was
// refused.
func Refused(err error) error {
	if IsFault(err) {
		return err
	}
	return coded(ExitRefused, err)
}

// RolledBack marks err as a failed rollout that was rolled back
// (ExitRolledBack).
func RolledBack(err error) error { return coded(ExitRolledBack, err) }

// InputRejected marks err as an input object that failed validation
// (ExitInputRejected).
func InputRejected(err error) error { return coded(ExitInputRejected, err) }

// Drift marks err as a rollout the drift gate stopped: MCO rendered a
// config other than the predicted one
// (ExitDrift).
func Drift(err error) error { return coded(ExitDrift, err) }

// NotReproducible marks err as an image whose rebuild from its attested
// inputs gave another digest (ExitNotReproducible).
func NotReproducible(err error) error { return coded(ExitNotReproducible, err) }

// UsageErrorf returns a UsageError.
func UsageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ValidationErrors joins every flag problem into one usage error, so a
// user sees all of them at once; nil when there are none.
func ValidationErrors(errs ...error) error {
	if err := errors.Join(errs...); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// Required returns a usage error naming flag when value is empty.
func Required(flag, value string) error {
	if value == "" {
		return fmt.Errorf("--%s is required", flag)
	}
	return nil
}
