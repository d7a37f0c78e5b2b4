package trigger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kiln-dev/kiln/pkg/pipeline"
)

// attemptFile in a run folder records where the run's latest attempt
// stands: each task's status as it starts and ends, and the run's status
// once it ended. A rerun reads it to say what happened to the previous
// attempt.
const attemptFile = "attempt.json"

// attempt is one attempt at a pool's run. A killed attempt is redone from
// scratch, never resumed: a kill can land after a stage pushed to the
// registry and before it wrote its results, the embedded registry keeps
// manifests in memory only, and a stage's result files say nothing about
// what it left in the work folder. The stages' own reuse decides what a
// redo can skip, from the registry, where it can be checked.
type attempt struct {
	Run     string            `json:"run"`
	PID     int               `json:"pid"`
	Started time.Time         `json:"started"`
	Tasks   map[string]string `json:"tasks"`
	Order   []string          `json:"order"` // tasks in the order they started
	Ended   string            `json:"ended,omitempty"`

	path   string
	w      io.Writer
	warned bool
}

// startAttempt says what happened to a previous attempt at run, removes
// its folder and records a new attempt in a fresh one.
func startAttempt(w io.Writer, runDir, run string) (*attempt, error) {
	if msg, err := previousAttempt(runDir, run); err != nil {
		return nil, err
	} else if msg != "" {
		fmt.Fprintln(w, msg)
	}
	if err := os.RemoveAll(runDir); err != nil {
		return nil, fmt.Errorf("removing the folder of run %s's previous attempt: %w", run, err)
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, err
	}
	a := &attempt{Run: run, PID: os.Getpid(), Started: time.Now().UTC(), Tasks: map[string]string{},
		path: filepath.Join(runDir, attemptFile), w: w}
	return a, a.save()
}

// previousAttempt describes the attempt whose folder runDir is, or "".
func previousAttempt(runDir, run string) (string, error) {
	if _, err := os.Stat(runDir); errors.Is(err, os.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	var prev attempt
	b, err := os.ReadFile(filepath.Join(runDir, attemptFile))
	if err != nil || json.Unmarshal(b, &prev) != nil {
		// Writes are atomic: no record means none was ever written.
		return fmt.Sprintf("redoing run %s: previous attempt was interrupted before its first task", run), nil
	}
	if prev.Ended != "" {
		return fmt.Sprintf("redoing run %s: previous attempt ended %s", run, prev.Ended), nil
	}
	var at []string
	for _, t := range prev.Order {
		if prev.Tasks[t] == pipeline.StateRunning {
			at = append(at, t)
		}
	}
	switch {
	case len(at) > 0:
		return fmt.Sprintf("redoing run %s: previous attempt was interrupted at task %s", run, strings.Join(at, ", ")), nil
	case len(prev.Order) > 0:
		return fmt.Sprintf("redoing run %s: previous attempt was interrupted after task %s", run, prev.Order[len(prev.Order)-1]), nil
	}
	return fmt.Sprintf("redoing run %s: previous attempt was interrupted before its first task", run), nil
}

// record is the executor's OnTask.
func (a *attempt) record(task, status string) {
	if _, seen := a.Tasks[task]; !seen {
		a.Order = append(a.Order, task)
	}
	a.Tasks[task] = status
	a.warn(a.save())
}

// end records the run's status.
func (a *attempt) end(status string) {
	a.Ended = status
	a.warn(a.save())
}

// warn: a record that cannot be written only makes a later rerun's
// message vaguer; the run itself goes on.
func (a *attempt) warn(err error) {
	if err != nil && !a.warned {
		a.warned = true
		fmt.Fprintf(a.w, "run %s: recording progress: %v\n", a.Run, err)
	}
}

func (a *attempt) save() error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(a.path, append(b, '\n'), 0o644)
}

// writeFileAtomic replaces path with b so that a crash at any point
// leaves either the old file or the new one: a temporary file in the same
// folder, synced, renamed over path, and the folder synced.
func writeFileAtomic(path string, b []byte, mode os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	if _, err = f.Write(b); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
