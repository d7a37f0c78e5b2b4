package localrun

import (
	"testing"

	"github.com/kiln-dev/kiln/pkg/pipeline"
)

// TestSignedColumnCountsAReusedImageCheckedByRollout: the summary's SIGNED
// is true when image-sign signed and verify passed, and also when
// image-build reused an image it proved kiln signed and rollout made the
// policy check (the Pipeline skips image-sign and verify then); a skipped
// image-sign of a built image, or a reused image nothing checked, is false.
func TestSignedColumnCountsAReusedImageCheckedByRollout(t *testing.T) {
	run := func(reused, sign, verify, rollout string) *pipeline.RunResult {
		return &pipeline.RunResult{Tasks: []pipeline.TaskResult{
			{Name: "image-build", Status: pipeline.StateSucceeded, Results: map[string]string{"REUSED": reused}},
			{Name: "image-sign", Status: sign}, {Name: "verify", Status: verify}, {Name: "rollout", Status: rollout},
		}}
	}
	ok, skip, fail := pipeline.StateSucceeded, pipeline.StateSkipped, pipeline.StateFailed
	for _, tc := range []struct {
		name                          string
		reused, sign, verify, rollout string
		want                          string
	}{
		{"built, signed and verified", "false", ok, ok, ok, "true"},
		{"built, verify failed", "false", ok, fail, skip, "false"},
		{"built, image-sign skipped", "false", skip, ok, ok, "false"},
		{"reused, checked by rollout", "true", skip, skip, ok, "true"},
		{"reused, verified without rollout", "true", skip, ok, skip, "true"},
		{"reused, rollout refused it", "true", skip, skip, fail, "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := signed(run(tc.reused, tc.sign, tc.verify, tc.rollout)); got != tc.want {
				t.Errorf("signed = %s, want %s", got, tc.want)
			}
		})
	}
}
