//go:build linux

package localrun

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestFailedStepIsShownWithTaskStepExitCodeAndLogTail: when a step fails
// in local mode, the output names the task, the step and its exit code,
// shows the cause the step recorded (what the report shows too), the last
// lines of the step's log (the error kiln-steps printed),
// then the log's path, so nobody has to open the file to learn the cause.
func TestFailedStepIsShownWithTaskStepExitCodeAndLogTail(t *testing.T) {
	r := newCrashRig(t)
	t.Setenv("KILN_TEST_FAIL", "image-build")
	var log bytes.Buffer
	err := runLocal(context.Background(), r.options(), &log)
	if err == nil {
		t.Fatalf("run with a failing image-build succeeded:\n%s", log.String())
	}
	out := log.String()
	runs, _ := filepath.Glob(filepath.Join(r.out, "runs", "*", "tasks", "image-build", "image-build*.log"))
	if len(runs) == 0 {
		t.Fatalf("no image-build log under %s:\n%s", r.out, out)
	}
	want := []string{
		"image-build  Failed (Failed) after ",
		"  task image-build (Task kiln-image-build), step image-build (1 of 1): exit code 3\n",
		"  cause: registry unreachable\n",
		"  last 2 lines of its log:\n",
		"    | image-build: working\n",
		"    | kiln-steps image-build: registry unreachable\n",
		"  log: ",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(out[at:], w)
		if i < 0 {
			t.Fatalf("output lacks %q after offset %d:\n%s", w, at, out)
		}
		at += i + len(w)
	}
	path, _, _ := strings.Cut(out[at:], "\n")
	found := false
	for _, r := range runs {
		found = found || r == path
	}
	if !found {
		t.Errorf("printed log path %q is not one of the image-build logs %v", path, runs)
	}
}
