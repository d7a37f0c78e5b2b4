package adversarial

import (
	"strings"
	"testing"
)

// TestLaunderedImageAtFingerprintTagIsRebuiltNeverSigned: an attacker with
// push access copies kiln's labels and annotations onto kiln's image plus
// one file, pushes it to the fingerprint tag, and the next run starts from
// a fresh workspace. image-build must not reuse it: it rebuilds kiln's own
// image, says which digest it rejected, moves the tag back, and image-sign
// and verify never vouch for the attacker's digest.
func TestLaunderedImageAtFingerprintTagIsRebuiltNeverSigned(t *testing.T) {
	s := newNodeImageSite(t)
	first := s.newRun(t, "worker", "hello")
	built := first.build(t)
	if err := first.sign(image(built)); err != nil {
		t.Fatal(err)
	}
	tag, attacker := s.plantAtFingerprintTag(t, first, built)
	if attacker == built["IMAGE_DIGEST"] {
		t.Fatal("the laundered image has kiln's digest")
	}

	next := s.newRun(t, "worker", "hello")
	got := next.build(t)
	t.Logf("REUSE_REJECTED: %s", got["REUSE_REJECTED"])
	if got["REUSED"] != "false" {
		t.Fatalf("REUSED=%s for the laundered image %s\n%s", got["REUSED"], attacker, next.out.String())
	}
	want := "tag " + tag + " holds " + attacker + " with no kiln attestation for these inputs: "
	if !strings.HasPrefix(got["REUSE_REJECTED"], want) {
		t.Errorf("REUSE_REJECTED %q, want it to start %q", got["REUSE_REJECTED"], want)
	}
	if !strings.Contains(next.out.String(), want) {
		t.Errorf("the step log does not say why:\n%s", next.out.String())
	}
	if got["IMAGE_DIGEST"] != built["IMAGE_DIGEST"] {
		t.Errorf("rebuilt %s, want kiln's own build %s", got["IMAGE_DIGEST"], built["IMAGE_DIGEST"])
	}
	if now := s.tagDigest(t, tag); now != built["IMAGE_DIGEST"] {
		t.Errorf("tag %s holds %s after the rebuild, want kiln's %s", tag, now, built["IMAGE_DIGEST"])
	}
	// The pipeline signs what image-build reports; the attacker's digest
	// can be neither signed through it nor pass verify.
	if err := next.sign(image(got)); err != nil {
		t.Fatal(err)
	}
	if err := next.sign(s.repo + "@" + attacker); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("image-sign of the attacker's digest: %v, want a refusal", err)
	}
	s.assertNotKilnSigned(t, next, attacker)
	if err := next.verify(image(got)); err != nil {
		t.Errorf("verify of kiln's rebuild: %v", err)
	}
}

// fingerprintOf reads the fingerprint image-build recorded.
func fingerprintOf(t *testing.T, r *run) string {
	t.Helper()
	rep, err := osimageReport(r)
	if err != nil {
		t.Fatal(err)
	}
	return rep.Fingerprint
}
