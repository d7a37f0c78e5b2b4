package adversarial

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestSignatureCopiedToAnotherDigestIsRejected: the attacker pushes their
// image to the fingerprint tag and copies kiln's real .sig and .att
// manifests (kiln's key, over kiln's digest) to the tags cosign looks up
// for the attacker's digest. The signature names another digest, so
// nothing is reused, signed or verified.
func TestSignatureCopiedToAnotherDigestIsRejected(t *testing.T) {
	s := newNodeImageSite(t)
	first := s.newRun(t, "worker", "hello")
	built := first.build(t)
	if err := first.sign(image(built)); err != nil {
		t.Fatal(err)
	}
	_, attacker := s.plantAtFingerprintTag(t, first, built)
	for _, suffix := range []string{".sig", ".att"} {
		from := s.ref(t, s.repo+":"+strings.Replace(built["IMAGE_DIGEST"], ":", "-", 1)+suffix)
		desc, err := remote.Get(from)
		if err != nil {
			t.Fatal(err)
		}
		to := s.ref(t, s.repo+":"+strings.Replace(attacker, ":", "-", 1)+suffix)
		if err := remote.Put(to, desc); err != nil {
			t.Fatal(err)
		}
	}

	next := s.newRun(t, "worker", "hello")
	got := next.build(t)
	t.Logf("REUSE_REJECTED: %s", got["REUSE_REJECTED"])
	if got["REUSED"] != "false" || !strings.Contains(got["REUSE_REJECTED"], "holds "+attacker+" with no kiln attestation") {
		t.Fatalf("results %v, want the copied signature rejected\n%s", got, next.out.String())
	}
	if got["IMAGE_DIGEST"] != built["IMAGE_DIGEST"] {
		t.Errorf("rebuilt %s, want kiln's own build %s", got["IMAGE_DIGEST"], built["IMAGE_DIGEST"])
	}
	s.assertNotKilnSigned(t, next, attacker)
}
