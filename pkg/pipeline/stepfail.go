package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// TailLines is how many of a failed step's last log lines are kept: enough
// for kiln-steps' error line and the progress lines before it.
const TailLines = 15

// tailBytes bounds what is read from the end of a log; a step's last lines
// are short, and a log can be gigabytes (buildah).
const tailBytes = 64 << 10

// maxTailLine cuts one log line: a terminal shows the start of an error,
// and the whole line stays in the log.
const maxTailLine = 300

// StepFailure is a step that ended badly. Local mode has no Dashboard: it
// prints this so the cause is read without opening the log.
type StepFailure struct {
	Step         string
	Index, Count int // 1-based position among the Task's steps
	// ExitCode is the process's exit code; -1 when it did not exit on its
	// own (killed by a signal, or never started).
	ExitCode int
	// Signal names the signal that ended the process, if one did.
	Signal string
	// Log is the step's log file; Tail its last lines.
	Log  string
	Tail []string
	Err  error
	// Cause is what the step recorded as its cause (kiln's steps write
	// <stage>.error in the work workspace); "" when it recorded none.
	Cause string
}

// Error keeps the one-line form a TaskRun message has.
func (f *StepFailure) Error() string {
	return fmt.Sprintf("step %s (%d of %d): %v; log %s", f.Step, f.Index, f.Count, f.Err, f.Log)
}

func (f *StepFailure) Unwrap() error { return f.Err }

// Exit says how the process ended, for a person: "exit code 3" or
// "killed by signal terminated".
func (f *StepFailure) Exit() string {
	switch {
	case f.Signal != "":
		return "killed by signal " + f.Signal
	case f.ExitCode >= 0:
		return fmt.Sprintf("exit code %d", f.ExitCode)
	default:
		return "did not run: " + f.Err.Error()
	}
}

// newStepFailure describes err, the outcome of step index (0-based) of
// count, whose output went to log.
func newStepFailure(step string, index, count int, log string, err error) *StepFailure {
	f := &StepFailure{Step: step, Index: index + 1, Count: count, ExitCode: -1, Log: log, Err: err}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		f.ExitCode = exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			f.Signal = ws.Signal().String()
		}
	}
	f.Tail = tailFile(log, TailLines)
	return f
}

// tailFile returns the last n lines of path; none when it cannot be read
// (the failure itself is still reported).
func tailFile(path string, n int) []string {
	fh, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil
	}
	off := max(st.Size()-tailBytes, 0)
	b, err := io.ReadAll(io.NewSectionReader(fh, off, st.Size()-off))
	if err != nil {
		return nil
	}
	if off > 0 { // the first line read is partial
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	lines = lines[max(len(lines)-n, 0):]
	for i, l := range lines {
		if len(l) > maxTailLine {
			lines[i] = l[:maxTailLine] + "…"
		}
	}
	return lines
}

// Describe writes the failure as local mode prints it: the task, the step
// and how it ended, the last lines of its log, then the log's path. The
// cause and the log lines are escaped (termsafe): a log holds whatever the
// step's tools printed, and a line cut at maxTailLine may end mid-rune.
func (f *StepFailure) Describe(w io.Writer, task, taskName string) {
	if taskName != "" && taskName != task {
		task += " (Task " + taskName + ")"
	}
	fmt.Fprintf(w, "  task %s, step %s (%d of %d): %s\n", task, f.Step, f.Index, f.Count, f.Exit())
	if f.Cause != "" {
		fmt.Fprintf(w, "  cause: %s\n", termsafe.Escape(f.Cause))
	}
	if len(f.Tail) > 0 {
		if len(f.Tail) == 1 {
			fmt.Fprintf(w, "  last line of its log:\n")
		} else {
			fmt.Fprintf(w, "  last %d lines of its log:\n", len(f.Tail))
		}
		for _, l := range f.Tail {
			fmt.Fprintf(w, "    | %s\n", termsafe.Escape(l))
		}
	}
	fmt.Fprintf(w, "  log: %s\n", f.Log)
}
