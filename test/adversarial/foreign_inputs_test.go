package adversarial

import (
	"strings"
	"testing"
)

// TestAttestationOfOtherInputsIsRejected: the attacker puts at worker's
// fingerprint tag an image kiln really built, signed and attested, but for
// the infra pool. Signature and attestation verify with kiln's key; the
// attested inputs are not worker's, so worker's image is rebuilt and the
// rejection names the difference.
func TestAttestationOfOtherInputsIsRejected(t *testing.T) {
	s := newNodeImageSite(t)
	worker := s.newRun(t, "worker", "hello")
	workerBuilt := worker.build(t)
	tag := "kiln-" + fingerprintOf(t, worker)

	infra := s.newRun(t, "infra", "hello")
	infraBuilt := infra.build(t)
	if err := infra.sign(image(infraBuilt)); err != nil {
		t.Fatal(err)
	}
	desc := s.ref(t, image(infraBuilt))
	img, err := remoteImage(desc)
	if err != nil {
		t.Fatal(err)
	}
	if d := s.push(t, s.repo+":"+tag, img).String(); d != infraBuilt["IMAGE_DIGEST"] {
		t.Fatalf("retagged %s, want infra's %s", d, infraBuilt["IMAGE_DIGEST"])
	}

	next := s.newRun(t, "worker", "hello")
	got := next.build(t)
	t.Logf("REUSE_REJECTED: %s", got["REUSE_REJECTED"])
	if got["REUSED"] != "false" {
		t.Fatalf("worker reused infra's image %s\n%s", infraBuilt["IMAGE_DIGEST"], next.out.String())
	}
	for _, want := range []string{"holds " + infraBuilt["IMAGE_DIGEST"], `parameter pool is "infra", want "worker"`} {
		if !strings.Contains(got["REUSE_REJECTED"], want) {
			t.Errorf("REUSE_REJECTED %q does not say %q", got["REUSE_REJECTED"], want)
		}
	}
	if got["IMAGE_DIGEST"] != workerBuilt["IMAGE_DIGEST"] {
		t.Errorf("rebuilt %s, want worker's own build %s", got["IMAGE_DIGEST"], workerBuilt["IMAGE_DIGEST"])
	}
	// Worker's build is signed with worker's inputs only now.
	if err := next.sign(image(got)); err != nil {
		t.Fatal(err)
	}
	again := s.newRun(t, "worker", "hello").build(t)
	if again["REUSED"] != "true" || again["IMAGE_DIGEST"] != workerBuilt["IMAGE_DIGEST"] {
		t.Errorf("after signing worker's build, a rerun gives %v, want its reuse", again)
	}
}
