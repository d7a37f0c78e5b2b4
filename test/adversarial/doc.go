// Package adversarial holds the node-image pipeline's tests against an
// attacker with push access to the image repository: a foreign image at
// kiln's fingerprint tag, a tag moved after the build, a replaced base, a
// signature or attestation copied from another digest or another pool's
// inputs. Each test runs the real build and sign stages against a real
// registry and checks that nothing the attacker planted is reused, signed
// or rolled out, and that the refusal names what differs.
package adversarial
