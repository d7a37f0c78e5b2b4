package adversarial

import (
	"strings"
	"testing"
)

// TestImageSignSignsTheRecordedDigestNotTheTag: between image-build and
// image-sign the attacker moves the fingerprint tag to their image.
// image-sign signs the digest build.json records (the Pipeline passes
// IMAGE_URL@IMAGE_DIGEST), refuses a tag before any request and refuses any digest build.json
// does not describe; the attacker's digest never gets kiln's signature.
func TestImageSignSignsTheRecordedDigestNotTheTag(t *testing.T) {
	s := newNodeImageSite(t)
	r := s.newRun(t, "worker", "hello")
	built := r.build(t)
	tag, attacker := s.plantAtFingerprintTag(t, r, built)

	// A tag is refused by image-sign's flag check, before the registry is
	// asked; a digest build.json does not describe, against build.json.
	for target, want := range map[string]string{
		s.repo + ":" + tag:      "a tag could move",
		s.repo + "@" + attacker: "refusing",
	} {
		err := r.sign(target)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("image-sign %s: %v, want a refusal (%q)", target, err, want)
		}
	}
	if err := r.sign(image(built)); err != nil {
		t.Fatal(err)
	}
	s.assertNotKilnSigned(t, r, attacker)
	if err := r.verify(image(built)); err != nil {
		t.Errorf("verify of kiln's build: %v", err)
	}
}
