package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/pkg/work"
)

// TestSkippedStagesOfAReusedImageSayWhy: when image-build reused an image
// it proved, the rows of image-sign and verify, which the Pipeline skips
// for it, say why; a skipped stage of a run that built its image says
// nothing it does not know.
func TestSkippedStagesOfAReusedImageSayWhy(t *testing.T) {
	status := map[string]string{"image-build": "Succeeded", "image-sign": "None", "verify": "None", "kmod-build": "None"}
	for _, tc := range []struct {
		name   string
		reused bool
		want   map[string]string
	}{
		{"reused", true, map[string]string{
			"image-sign": "not signed again: the reused image carries kiln's signature and an attestation of these inputs",
			"verify":     "left to rollout, which checks the same policy before any write",
			"kmod-build": "",
		}},
		{"built", false, map[string]string{"image-sign": "", "verify": "", "kmod-build": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := work.Workspace{Root: t.TempDir()}
			writeJSON(t, ws.BuildReportPath(), work.BuildReport{Record: trust.Record{Ref: "r/os@sha256:2"}, Reused: tc.reused, Fingerprint: "0123456789abcdef"})
			rows, err := Collect(ws, status)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, r := range rows {
				if _, ok := tc.want[r.Stage]; ok {
					got[r.Stage] = r.Detail
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("details (-want +got):\n%s", d)
			}
		})
	}
}
