package prune

import (
	"bytes"
	"testing"

	"github.com/kiln-dev/kiln/pkg/retention"
	"github.com/kiln-dev/kiln/test/golden"
)

// TestPrintPlanSaysWhatStaysWhyWhatGoesAndTheBytes: one line per kept
// digest with its reasons, each candidate that stays with its rule, each
// delete, the orphans and the bytes; a control character a registry put
// in a tag is escaped.
func TestPrintPlanSaysWhatStaysWhyWhatGoesAndTheBytes(t *testing.T) {
	const repo = "registry.example.com/kiln/os"
	d := func(c byte) string { return "sha256:" + string(bytes.Repeat([]byte{c}, 64)) }
	p := &Plan{
		Keep: retention.Set{
			d('a'): {"pool worker: current rendered config rendered-worker-1", "MachineConfig 99-kiln-worker-os-image: osImageURL"},
			d('c'): {"kmod-image of kept sha256:aaaaaaaaaaaa"},
		},
		Decisions: []retention.Decision{
			{Candidate: retention.Candidate{Repo: repo, Digest: d('a'), Tags: []string{"kiln-1"}}, Reason: "kept: pool worker: current rendered config rendered-worker-1"},
			{Candidate: retention.Candidate{Repo: repo, Digest: d('b'), Tags: []string{"kiln-2"}}, Delete: true, Reason: "kiln's image, needed by nothing in the keep set"},
			{Candidate: retention.Candidate{Repo: repo, Digest: d('e'), Tags: []string{"kiln-3", "evil\x1b[2J"}}, Reason: "tag evil\x1b[2J was not written by kiln"},
		},
		Orphans:    []Orphan{{Repo: repo, Subject: d('f'), Tags: []string{"sha256-ff.att", "sha256-ff.sig"}}},
		FreedBytes: 123456,
	}
	var b bytes.Buffer
	PrintPlan(&b, p)
	golden.Check(t, "testdata/plan.txt", b.Bytes())
}
