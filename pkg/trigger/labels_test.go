package trigger

import (
	"errors"
	"testing"
	"time"
)

// TestBadWaveRefusedAlikeInBothModes: the same pool with kiln.dev/wave
// "2a" gets, on a real apiserver, an InvalidInputs event and no run, and in
// directory mode an error; both carry the same message.
func TestBadWaveRefusedAlikeInBothModes(t *testing.T) {
	h := newHarness(t)
	h.create(pool("worker", true, LabelWave, "2a"), machineConfig("00-worker", "worker", "a=1"))
	h.start(300 * time.Millisecond)
	msg, ok := h.event("worker", ReasonInputs)
	if !ok {
		t.Fatal("no InvalidInputs event on the pool")
	}
	consistently(t, 2*time.Second, "a run was created for a pool with a bad wave", func() bool { return len(h.runs("worker")) > 0 })

	// Directory mode's PlanLocal (pkg/localrun) returns PoolLabels' error
	// as it is; its own tests check the message for this label.
	_, _, err := PoolLabels(pool("worker", true, LabelWave, "2a"))
	var e *Error
	if !errors.As(err, &e) || e.Reason != ReasonInputs {
		t.Fatalf("directory mode: %v, want an %s error", err, ReasonInputs)
	}
	if e.Err.Error() != msg {
		t.Fatalf("messages differ:\ncluster:   %s\ndirectory: %s", msg, e.Err.Error())
	}
}
