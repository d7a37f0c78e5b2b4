package kmod

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// An upgrade-ahead run (the trigger's trigger=upgrade-ahead, with
// --target-release) builds the kmod image for a release the cluster does
// not run yet. It must not push to containerImage's tag: the running
// pool's next run would find an image for a kernel no node boots there,
// prove nothing and rebuild over it. It pushes to AheadRef instead, a tag
// of the same repository named after the target kernel and the inputs it
// attests. When the cluster then moves to that release, the pool's run
// computes the same inputs, proves the image at their ahead tag (kiln's
// signature and attestation for exactly those inputs) and points
// containerImage's tag at that digest: no build. Two targets on one kernel
// with other inputs (another driver toolkit) wait at two tags, so the
// later ahead run does not overwrite the earlier one's image.
//
// The attested build target stays containerImage (or the unsigned image):
// the ahead tag is only where the image waits, so the inputs an ahead run
// attests are the inputs the upgrade's run computes, and the image keeps
// proving after it moved to containerImage's tag.

// maxTag is the distribution spec's limit on a tag's length.
const maxTag = 128

// aheadHashLen is how many hex digits of the full tag's sha256 end a tag
// that had to be cut to maxTag: two long kernels that share a prefix keep
// distinct tags.
const aheadHashLen = 16

// aheadInputsLen is how many hex digits of the inputs' fingerprint end an
// ahead tag (48 bits: no two input sets of one kernel meet by chance).
const aheadInputsLen = 12

// AheadRef names where an upgrade-ahead run pushes the image meant for ref
// (containerImage or the unsigned image) on kernel, built or signed from
// inputs: ref's repository, with tag "<ref's tag>-<kernel>-<inputs>"
// (ref's tag defaults to latest; a digest is dropped; <inputs> is the
// first 12 hex digits of inputs.Fingerprint()). Characters a tag may not
// hold ("+" in some kernel versions) become "_"; a tag over 128 characters
// is cut and ends with a hash of the whole, so it stays unique. The result
// is checked with go-containerregistry's tag rules.
func AheadRef(ref, kernel string, inputs trust.Inputs) (string, error) {
	if kernel == "" {
		return "", fmt.Errorf("naming the upgrade-ahead tag of %q: the kernel version is empty", ref)
	}
	if err := inputs.Validate(); err != nil {
		return "", fmt.Errorf("naming the upgrade-ahead tag of %q: %w", ref, err)
	}
	if _, err := name.ParseReference(ref); err != nil {
		return "", fmt.Errorf("naming the upgrade-ahead tag of %q: %w", ref, err)
	}
	base, _, _ := strings.Cut(ref, "@") // a digest, validated above
	tagged, err := name.NewTag(base)
	if err != nil {
		return "", fmt.Errorf("naming the upgrade-ahead tag of %q: %w", ref, err)
	}
	tag := tagged.TagStr() + "-" + tagChars(kernel) + "-" + inputs.Fingerprint()[:aheadInputsLen]
	if len(tag) > maxTag {
		sum := sha256.Sum256([]byte(tag))
		tag = tag[:maxTag-aheadHashLen-1] + "-" + hex.EncodeToString(sum[:])[:aheadHashLen]
	}
	out, err := name.NewTag(tagged.Context().Name() + ":" + tag)
	if err != nil {
		return "", fmt.Errorf("naming the upgrade-ahead tag of %q for kernel %q: %w", ref, kernel, err)
	}
	return out.String(), nil
}

// tagChars keeps the characters a tag allows ([A-Za-z0-9_.-]) and makes
// every other one "_".
func tagChars(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		}
		return '_'
	}, s)
}

// validTargetRelease checks --target-release: empty (a run for the
// running release) or a semantic version, as ClusterVersion names
// releases.
func validTargetRelease(v string) error {
	if v == "" {
		return nil
	}
	if _, err := semver.Parse(v); err != nil {
		return fmt.Errorf("--target-release %q: not a release version (semantic version): %w", v, err)
	}
	return nil
}

// pushPlace is where a kmod stage pushes what it makes for target on
// kernel from inputs: target itself, or its ahead tag in an upgrade-ahead
// run.
func pushPlace(targetRelease, target, kernel string, inputs trust.Inputs) (string, error) {
	if targetRelease == "" {
		return target, nil
	}
	return AheadRef(target, kernel, inputs)
}

// adoptAhead looks for what an upgrade-ahead run left for target on
// kernel. When kiln's identity signed it and attested exactly want, it
// points target's tag at that digest (promote) and returns it proven.
// Anything else at the ahead tag is left alone and returned with why it
// was not adopted.
func adoptAhead(ctx context.Context, r registry.Remote, target, kernel string, id trust.Identity, want trust.Inputs, p *step.Progress) (Reuse, error) {
	at, err := AheadRef(target, kernel, want)
	if err != nil {
		return Reuse{}, err
	}
	u, err := proveAt(ctx, r, at, id, want)
	if err != nil {
		return Reuse{}, fmt.Errorf("checking the upgrade-ahead image %s: %w", at, err)
	}
	if !u.Proven {
		return u, nil
	}
	return promote(ctx, r, target, at, u, p)
}

// promote points target's tag at u, proven at the ahead tag at: a
// manifest copy within the repository; nothing is built and no blob moves.
// A target that names a digest has no tag to move, and u is then not
// reused.
func promote(ctx context.Context, r registry.Remote, target, at string, u Reuse, p *step.Progress) (Reuse, error) {
	ref, err := r.ParseRef(target)
	if err != nil {
		return Reuse{}, err
	}
	tag, ok := ref.(name.Tag)
	if !ok {
		u.Proven, u.Rejected = false, fmt.Sprintf("%s holds %s, attested for these inputs, but %s names a digest, not a tag to move", at, u.Digest, target)
		return u, nil
	}
	d, err := name.NewDigest(u.Image, name.WeakValidation)
	if err != nil {
		return Reuse{}, err
	}
	desc, err := r.GetNamed(ctx, d)
	if err != nil {
		return Reuse{}, registry.Classify(err, "reading", u.Image)
	}
	if err := r.Tag(ctx, tag, desc); err != nil {
		return Reuse{}, registry.Classify(err, "tagging", target)
	}
	p.Printf("%s is %s, made ahead of the upgrade and attested for these inputs; %s now names it", at, u.Digest, target)
	u.Image = tag.Context().Digest(u.Digest).String()
	return u, nil
}

// joinRejected tells both places' reasons in REUSE_REJECTED: the target's
// and the ahead tag's.
func joinRejected(target, ahead string) string {
	switch {
	case target == "":
		return ahead
	case ahead == "":
		return target
	}
	return target + "; " + ahead
}
