package localrun

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
	"github.com/kiln-dev/kiln/pkg/safepath"
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
//
// The record is also the run folder's proof of ownership: a folder is
// only ever created holding it, and is removed only when its record names
// the same pool and run, so a run never deletes a folder it did not make
// (another pool's run, or anything else put there).
type attempt struct {
	Run     string            `json:"run"`
	Pool    string            `json:"pool"`
	PID     int               `json:"pid"`
	Started time.Time         `json:"started"`
	Tasks   map[string]string `json:"tasks"`
	Order   []string          `json:"order"` // tasks in the order they started
	Ended   string            `json:"ended,omitempty"`

	path   string
	w      io.Writer
	warned bool
}

// startAttempt says what happened to a previous attempt at pool's run,
// removes its folder and records a new attempt in a fresh one.
func startAttempt(w io.Writer, runDir, pool, run string) (*attempt, error) {
	prev, err := readAttempt(runDir)
	if err != nil {
		return nil, err
	}
	if prev != nil {
		if err := prev.ownedBy(runDir, pool, run); err != nil {
			return nil, err
		}
		fmt.Fprintln(w, prev.describe(run))
		if err := os.RemoveAll(runDir); err != nil {
			return nil, fmt.Errorf("removing the folder of run %s's previous attempt: %w", run, err)
		}
	}
	a := &attempt{Run: run, Pool: pool, PID: os.Getpid(), Started: time.Now().UTC(), Tasks: map[string]string{}, w: w}
	if err := a.create(runDir); err != nil {
		return nil, fmt.Errorf("creating the folder of run %s: %w", run, err)
	}
	return a, nil
}

// create makes runDir with the record already in it: the record is
// written into a fresh temporary folder beside runDir, which is then
// renamed to runDir. A crash leaves no run folder without a record, and
// the rename fails rather than merge into a folder that appeared since.
func (a *attempt) create(runDir string) (err error) {
	if err := os.MkdirAll(filepath.Dir(runDir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(runDir), "."+filepath.Base(runDir)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	a.path = filepath.Join(tmp, attemptFile)
	if err := a.save(); err != nil {
		return err
	}
	if _, err := os.Lstat(runDir); err == nil {
		return fmt.Errorf("%s appeared while the run was starting", runDir)
	}
	if err := os.Rename(tmp, runDir); err != nil {
		return err
	}
	a.path = filepath.Join(runDir, attemptFile)
	return nil
}

// readAttempt reads the record in runDir: nil when there is no such
// folder; an error when there is one without a readable record, which no
// run made.
func readAttempt(runDir string) (*attempt, error) {
	fi, err := os.Lstat(runDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	notOurs := func(why string) error {
		return fmt.Errorf("run folder %s %s, so no run made it: not removing it; remove it by hand if it is yours to lose", runDir, why)
	}
	if !fi.IsDir() {
		return nil, notOurs("is not a folder")
	}
	b, err := os.ReadFile(filepath.Join(runDir, attemptFile))
	if err != nil {
		return nil, notOurs("holds no readable " + attemptFile)
	}
	var prev attempt
	if err := json.Unmarshal(b, &prev); err != nil {
		return nil, notOurs("holds an " + attemptFile + " that is not an attempt record")
	}
	return &prev, nil
}

// ownedBy refuses a record of another pool's or another run's attempt.
// A record without a pool is from before records named it: its run name
// alone must match.
func (a *attempt) ownedBy(runDir, pool, run string) error {
	if a.Run != run || (a.Pool != "" && a.Pool != pool) {
		return fmt.Errorf("run folder %s belongs to run %s of pool %s, not to run %s of pool %s: not removing it",
			runDir, a.Run, a.Pool, run, pool)
	}
	return nil
}

// describe says what happened to the attempt, for the run that redoes it.
func (a *attempt) describe(run string) string {
	if a.Ended != "" {
		return fmt.Sprintf("redoing run %s: previous attempt ended %s", run, a.Ended)
	}
	var at []string
	for _, t := range a.Order {
		if a.Tasks[t] == pipeline.StateRunning {
			at = append(at, t)
		}
	}
	switch {
	case len(at) > 0:
		return fmt.Sprintf("redoing run %s: previous attempt was interrupted at task %s", run, strings.Join(at, ", "))
	case len(a.Order) > 0:
		return fmt.Sprintf("redoing run %s: previous attempt was interrupted after task %s", run, a.Order[len(a.Order)-1])
	}
	return fmt.Sprintf("redoing run %s: previous attempt was interrupted before its first task", run)
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
	return safepath.WriteFileAtomic(a.path, append(b, '\n'), 0o644)
}
