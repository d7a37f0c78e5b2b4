package retention

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/kiln-dev/kiln/pkg/trust"
)

// TagPrefix starts kiln's content-addressed tag, kiln-<fingerprint>, the
// tag image-build pushes a node image at.
const TagPrefix = "kiln-"

var (
	// Compiled on first use, not at the start of every step that links
	// this package.
	fingerprintTag = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^kiln-([0-9a-f]{64})$`) })
	artifactTag    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256-([0-9a-f]{64})\.(sig|att)$`) })
)

// Candidate is a manifest in one of kiln's repositories that a kiln-
// tag names, with what verifying it found.
type Candidate struct {
	// Repo is the repository, registry/path.
	Repo string `json:"repository"`
	// Digest is the manifest's sha256:<hex>.
	Digest string `json:"digest"`
	// Tags are every tag of Repo naming Digest (artifact tags excluded).
	Tags []string `json:"tags"`
	// Inputs are the inputs of the kiln attestations that verified with
	// kiln's key over Digest (pkg/sign); empty when none did.
	Inputs []trust.Inputs `json:"-"`
	// Unverified says why verification failed; "" when it passed.
	Unverified string `json:"unverified,omitempty"`
}

// Decision is what the prune does with one candidate, and why.
type Decision struct {
	Candidate
	Delete bool   `json:"delete"`
	Reason string `json:"reason"`
}

// Decide applies the ownership rules to each candidate: it is deleted
// only when it is in one of kiln's repositories (owned), not in keep,
// signed and attested with kiln's key, and every tag naming it is a
// kiln-<fingerprint> tag equal to the fingerprint of the inputs its
// attestation binds, a tag only kiln's image-build writes. Anything else
// (a base image, another signer's image, a tag someone else wrote) stays,
// with the rule that kept it.
func Decide(keep Set, owned []string, cands []Candidate) []Decision {
	out := make([]Decision, 0, len(cands))
	for _, c := range cands {
		d := Decision{Candidate: c}
		d.Delete, d.Reason = decide(keep, owned, c)
		out = append(out, d)
	}
	return out
}

func decide(keep Set, owned []string, c Candidate) (bool, string) {
	switch {
	case !slices.Contains(owned, c.Repo):
		return false, fmt.Sprintf("repository %s is not one of kiln's", c.Repo)
	case keep.Has(c.Digest):
		return false, "kept: " + strings.Join(keep[c.Digest], "; ")
	case c.Unverified != "":
		return false, "not signed and attested with kiln's key: " + c.Unverified
	case len(c.Inputs) == 0:
		return false, "no kiln attestation verified"
	case len(c.Tags) == 0:
		return false, "no kiln-<fingerprint> tag names it"
	}
	for _, t := range c.Tags {
		m := fingerprintTag().FindStringSubmatch(t)
		if m == nil {
			return false, fmt.Sprintf("tag %s was not written by kiln", t)
		}
		if !slices.ContainsFunc(c.Inputs, func(in trust.Inputs) bool { return in.Fingerprint() == m[1] }) {
			return false, fmt.Sprintf("tag %s is not the fingerprint of the inputs kiln attested for it", t)
		}
	}
	return true, "kiln's image, needed by nothing in the keep set"
}

// Listing is one repository's tags as the prune reads them.
type Listing struct {
	// Images maps a digest to the ordinary tags naming it; only digests a
	// kiln- tag names are listed (Candidates).
	Images map[string][]string
	// Artifacts maps a subject digest to its cosign artifact tags
	// (sha256-<hex>.sig, .att), in order.
	Artifacts map[string][]string
}

// Classify sorts a repository's tags (tag to the digest it names):
// cosign's artifact tags by subject, other tags by the digest they name.
func Classify(tags map[string]string) Listing {
	l := Listing{Images: map[string][]string{}, Artifacts: map[string][]string{}}
	for _, t := range sortedKeys(tags) {
		if m := artifactTag().FindStringSubmatch(t); m != nil {
			subject := "sha256:" + m[1]
			l.Artifacts[subject] = append(l.Artifacts[subject], t)
			continue
		}
		l.Images[tags[t]] = append(l.Images[tags[t]], t)
	}
	return l
}

// Candidates are the digests of l that some kiln- tag names, in order.
// A digest named only by other tags is not kiln's to judge.
func (l Listing) Candidates() []string {
	var out []string
	for _, d := range sortedKeys(l.Images) {
		if slices.ContainsFunc(l.Images[d], func(t string) bool { return strings.HasPrefix(t, TagPrefix) }) {
			out = append(out, d)
		}
	}
	return out
}

// Orphans are subjects with artifact tags but no tag of their own: what a
// prune interrupted between deleting a manifest and its artifacts left.
// The caller checks the subject is really gone before deleting them.
func (l Listing) Orphans() []string {
	var out []string
	for _, d := range sortedKeys(l.Artifacts) {
		if _, tagged := l.Images[d]; !tagged {
			out = append(out, d)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
