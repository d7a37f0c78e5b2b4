package retention

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/trust"
)

func TestDecideDeletesOnlyWhatKilnProvablyOwnsAndNothingNeeds(t *testing.T) {
	in := trust.Inputs{BuildType: trust.BuildTypeNodeImage, Parameters: map[string]string{"format": trust.NodeImageFormat, "pool": "worker"}}
	fp := in.Fingerprint()
	other := trust.Inputs{BuildType: trust.BuildTypeNodeImage, Parameters: map[string]string{"format": trust.NodeImageFormat, "pool": "infra"}}
	owned := []string{repo}
	keep := Set{"sha256:" + hexA: {"pool worker: current rendered config rendered-worker-1"}}
	cand := func(d string, tags []string, ins []trust.Inputs, unverified string) Candidate {
		return Candidate{Repo: repo, Digest: "sha256:" + d, Tags: tags, Inputs: ins, Unverified: unverified}
	}
	cases := []struct {
		name       string
		c          Candidate
		wantDelete bool
		wantReason string
	}{
		{"kiln's image at its fingerprint tag, needed by nothing", cand(hexB, []string{"kiln-" + fp}, []trust.Inputs{in}, ""),
			true, "kiln's image, needed by nothing in the keep set"},
		{"an image in the keep set", cand(hexA, []string{"kiln-" + fp}, []trust.Inputs{in}, ""),
			false, "kept: pool worker: current rendered config rendered-worker-1"},
		{"an image in another repository", Candidate{Repo: "quay.io/openshift/os", Digest: "sha256:" + hexB, Tags: []string{"kiln-" + fp}, Inputs: []trust.Inputs{in}},
			false, "repository quay.io/openshift/os is not one of kiln's"},
		{"another signer's image (kiln's key does not verify)", cand(hexB, []string{"kiln-" + fp}, nil, "no signature verified"),
			false, "not signed and attested with kiln's key: no signature verified"},
		{"signed but no kiln attestation", cand(hexB, []string{"kiln-" + fp}, nil, ""),
			false, "no kiln attestation verified"},
		{"a tag kiln did not write beside the fingerprint tag", cand(hexB, []string{"kiln-" + fp, "latest"}, []trust.Inputs{in}, ""),
			false, "tag latest was not written by kiln"},
		{"a kiln- tag that is not the attested fingerprint", cand(hexB, []string{"kiln-" + other.Fingerprint()}, []trust.Inputs{in}, ""),
			false, "tag kiln-" + other.Fingerprint() + " is not the fingerprint of the inputs kiln attested for it"},
		{"a kiln- tag that is no fingerprint", cand(hexB, []string{"kiln-base"}, []trust.Inputs{in}, ""),
			false, "tag kiln-base was not written by kiln"},
		{"untagged", cand(hexB, nil, []trust.Inputs{in}, ""),
			false, "no kiln-<fingerprint> tag names it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Decide(keep, owned, []Candidate{c.c})
			want := []Decision{{Candidate: c.c, Delete: c.wantDelete, Reason: c.wantReason}}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("Decide (-want +got):\n%s", d)
			}
		})
	}
}

func TestClassifySortsTagsIntoCandidatesArtifactsAndOrphans(t *testing.T) {
	fpTag := "kiln-" + hexE
	tags := map[string]string{
		fpTag:                     "sha256:" + hexA,
		"latest":                  "sha256:" + hexB,
		"sha256-" + hexA + ".sig": "sha256:" + hexC,
		"sha256-" + hexA + ".att": "sha256:" + hexD,
		"sha256-" + hexE + ".sig": "sha256:" + hexC,
		"sha256-abc.sig":          "sha256:" + hexD,
	}
	l := Classify(tags)
	want := Listing{
		Images: map[string][]string{
			"sha256:" + hexA: {fpTag}, "sha256:" + hexB: {"latest"}, "sha256:" + hexD: {"sha256-abc.sig"},
		},
		Artifacts: map[string][]string{
			"sha256:" + hexA: {"sha256-" + hexA + ".att", "sha256-" + hexA + ".sig"},
			"sha256:" + hexE: {"sha256-" + hexE + ".sig"},
		},
	}
	if d := cmp.Diff(want, l); d != "" {
		t.Errorf("Classify (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"sha256:" + hexA}, l.Candidates()); d != "" {
		t.Errorf("Candidates (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"sha256:" + hexE}, l.Orphans()); d != "" {
		t.Errorf("Orphans (-want +got):\n%s", d)
	}
}
