package pipeline

import (
	"bytes"
	"testing"
	"time"

	"github.com/kiln-dev/kiln/test/golden"
)

func TestWriteTable(t *testing.T) {
	res := &RunResult{RunName: "kiln-node-image-local", Status: "Failed", FailedTask: "verify", Message: "step verify (1 of 1): exit status 1", Duration: 3 * time.Second,
		Tasks: []TaskResult{
			{Name: "render", Status: StateSucceeded, Reason: "Succeeded", Attempts: 1, Duration: 1200 * time.Millisecond, Results: map[string]string{"HAS_KMOD": "false", "RENDERED_NAME": "rendered-worker-0123"}},
			{Name: "kmod-build", Status: StateSkipped, Reason: "When Expressions evaluated to false"},
			{Name: "verify", Status: StateFailed, Reason: "Failed", Attempts: 3, Duration: 900 * time.Millisecond},
			{Name: "rollout", Status: StateSkipped, Reason: "PipelineRun was stopping"},
			{Name: "report", Finally: true, Status: StateSucceeded, Reason: "Succeeded", Attempts: 1, Duration: 50 * time.Millisecond},
		}}
	var b bytes.Buffer
	if err := res.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/table.golden", b.Bytes())
}
