package retention

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/trust"
)

// Set is the keep set: digest (sha256:<hex>) to the reasons it stays.
// Keeping by digest alone, whatever the repository, is the safe side: the
// same bytes in kiln's repository are what a mirror or a copy points at.
type Set map[string][]string

// Has reports whether digest is kept.
func (s Set) Has(digest string) bool { return len(s[digest]) > 0 }

// Digests returns the kept digests in order.
func (s Set) Digests() []string { return slices.Sorted(maps.Keys(s)) }

func (s Set) add(digest, reason string) bool {
	if slices.Contains(s[digest], reason) {
		return false
	}
	s[digest] = append(s[digest], reason)
	return true
}

// Resolver turns an image reference by tag into the digest it names now;
// "" with no error means the tag names nothing (it cannot keep anything).
type Resolver func(ref string) (string, error)

// Resolve is the keep set of named images: a reference by digest is its
// digest, one by tag is what resolve says. A reference that cannot be
// resolved fails the whole set: pruning without it could delete what it
// names.
func Resolve(named []Named, resolve Resolver) (Set, error) {
	s := Set{}
	for _, n := range named {
		d, err := digestOf(n.Image)
		if err != nil {
			return nil, fmt.Errorf("reading the image %q (%s): %w", n.Image, n.Reason, err)
		}
		if d == "" {
			if d, err = resolve(n.Image); err != nil {
				return nil, fmt.Errorf("resolving the image %q (%s): %w", n.Image, n.Reason, err)
			}
		}
		if d != "" {
			s.add(d, n.Reason)
		}
	}
	return s, nil
}

// digestOf returns the digest of repository@alg:hex, "" for a reference
// by tag, and an error for a malformed digest.
func digestOf(ref string) (string, error) {
	_, d, ok := strings.Cut(ref, "@")
	if !ok {
		return "", nil
	}
	h, err := v1.NewHash(d)
	if err != nil {
		return "", fmt.Errorf("digest %q: %w", d, err)
	}
	return h.String(), nil
}

// Expand adds what each kept image was built from, as its verified kiln
// attestation says (prov: digest to the attested Inputs), and what those
// were built from in turn: a node image's kmod images, a signed kmod
// image's unsigned build, their base images. A node image whose kmod
// image is gone cannot be rebuilt or reproduced.
func (s Set) Expand(prov map[string][]trust.Inputs) {
	queue := s.Digests()
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		for _, in := range prov[d] {
			for _, dep := range builtFrom(in) {
				if s.add(dep.digest, fmt.Sprintf("%s of kept %s", dep.name, short(d))) && !slices.Contains(queue, dep.digest) {
					queue = append(queue, dep.digest)
				}
			}
		}
	}
}

type input struct{ name, digest string }

// builtFrom lists the image digests in, an attestation's inputs, names:
// its resolved dependencies and a kmod-sign's unsigned image. Documents
// (the rendered config, a Dockerfile) are named by digest too; keeping
// their digests costs nothing, as no manifest has them.
func builtFrom(in trust.Inputs) []input {
	var out []input
	for _, d := range in.Dependencies {
		if h, err := v1.NewHash(d.Digest); err == nil {
			out = append(out, input{d.Name, h.String()})
		}
	}
	if u := in.Parameters["unsignedImage"]; u != "" {
		if d, err := digestOf(u); err == nil && d != "" {
			out = append(out, input{"unsigned kmod image", d})
		}
	}
	return out
}

// short is a digest cut for messages: sha256:<first 12 hex>.
func short(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}
