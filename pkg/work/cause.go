package work

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/kiln-dev/kiln/pkg/safepath"
	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// MaxCause bounds a cause file: a cause is read by people, and a build
// tool's log tail belongs in the step's log, not in the report.
const MaxCause = 2000

// CausePath is where a failed stage leaves its cause, in its stage folder:
// image/image-build.error, rollout/rollout.error. Stages share folders
// (image/ holds image-build, image-sign and verify), so the file is named
// after the stage. The report reads it into the failed stage's row.
func (w Workspace) CausePath(stage string) string {
	return filepath.Join(w.StageDir(stage), stage+".error")
}

// Cause is the one-line form of err that a stage's log ends with and its
// cause file holds. Errors never carry secrets (no key, pull secret or
// user-data is put in an error message), so it is safe to write. They do
// carry text from outside (a registry's error message, an object's name),
// so control characters are escaped: the cause is shown on terminals by
// the report and in the FAILURE result.
func Cause(err error) string {
	s := strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")), " ")
	s = termsafe.Escape(s)
	if r := []rune(s); len(r) > MaxCause {
		s = string(r[:MaxCause-1]) + "…"
	}
	return s
}

// WriteCause records err as stage's cause. A workspace-less run (no
// --work) has nowhere to write it and is left alone.
func (w Workspace) WriteCause(stage string, err error) error {
	if w.Root == "" {
		return nil
	}
	dir, derr := w.Ensure(stage)
	if derr != nil {
		return derr
	}
	return os.WriteFile(filepath.Join(dir, stage+".error"), []byte(Cause(err)+"\n"), 0o644)
}

// ClearCause removes a cause left by an earlier attempt of the stage
// (a Tekton retry or a rerun on the same workspace).
func (w Workspace) ClearCause(stage string) error {
	if w.Root == "" {
		return nil
	}
	if err := os.Remove(w.CausePath(stage)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// MaxCauseRead bounds what ReadCause reads of a cause file. A stage writes
// at most MaxCause runes (4 bytes each at most), but the file sits in a
// shared workspace where anything may have replaced it: report must not
// read a 200 MiB file whole, nor hang on a FIFO.
const MaxCauseRead = 64 << 10

// TruncatedMarker ends a cause that was cut at MaxCauseRead.
const TruncatedMarker = " … (truncated)"

// ReadCause returns stage's recorded cause, "" when there is none. Only a
// regular file is read, and at most MaxCauseRead bytes of it; a longer one
// ends with TruncatedMarker. What is not a regular file is reported as
// such, in place of a cause.
func (w Workspace) ReadCause(stage string) string {
	b, truncated, err := safepath.ReadRegular(w.CausePath(stage), MaxCauseRead)
	if errors.Is(err, safepath.ErrNotRegular) {
		return fmt.Sprintf("(cause file %s: %v)", stage+".error", safepath.ErrNotRegular)
	}
	if err != nil {
		return ""
	}
	if truncated {
		// The cut may fall inside a character: drop its partial bytes.
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.Valid(b[max(len(b)-utf8.UTFMax, 0):]); i++ {
			b = b[:len(b)-1]
		}
		return strings.TrimSpace(string(b)) + TruncatedMarker
	}
	return strings.TrimSpace(string(b))
}
