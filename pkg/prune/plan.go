package prune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/retention"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/termsafe"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// Config is one prune.
type Config struct {
	Remote registry.Remote
	// Verifier is kiln's public key: an image is kiln's only when its
	// signature and attestation verify with it.
	Verifier signature.Verifier
	// Repos are kiln's repositories (registry/path); only their images
	// are candidates.
	Repos []string
	// PerPool is how many recent rendered configs' images each pool keeps.
	PerPool int
	// Live are the images of runs in progress or queued.
	Live []string
	// Cluster reads the objects the keep set comes from. Apply calls it
	// again right before each delete.
	Cluster func(ctx context.Context) (retention.Cluster, error)
	// Log receives progress lines; nil means none.
	Log io.Writer
}

// Plan is what a prune would do.
type Plan struct {
	// Keep is the keep set: digest to why it stays.
	Keep retention.Set `json:"keep"`
	// Decisions are the candidates (manifests kiln- tags name in kiln's
	// repositories) with what is done to each and why.
	Decisions []retention.Decision `json:"decisions"`
	// Orphans are artifacts left by an interrupted prune: kiln-signed
	// .sig/.att of images already deleted.
	Orphans []Orphan `json:"orphans"`
	// FreedBytes is what a garbage collection reclaims after the deletes.
	FreedBytes int64 `json:"freedBytes"`

	prov      map[string][]trust.Inputs
	artifacts map[string]map[string][]string // repo → subject → artifact tags
}

// Orphan is one subject's artifact tags whose subject is gone.
type Orphan struct {
	Repo    string   `json:"repository"`
	Subject string   `json:"subject"`
	Tags    []string `json:"tags"`
}

// Deletes returns the decisions that delete.
func (p *Plan) Deletes() []retention.Decision {
	var out []retention.Decision
	for _, d := range p.Decisions {
		if d.Delete {
			out = append(out, d)
		}
	}
	return out
}

// logf writes a progress line; tags, reasons and registry errors come
// from outside, so control characters are escaped.
func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintln(c.Log, termsafe.Escape(fmt.Sprintf(format, args...)))
	}
}

// MakePlan reads the cluster and kiln's repositories and decides.
// Nothing is deleted. A registry or cluster that cannot be read fails
// the plan: a keep set with a hole in it could delete what is needed.
func MakePlan(ctx context.Context, c Config) (*Plan, error) {
	p := &Plan{prov: map[string][]trust.Inputs{}, artifacts: map[string]map[string][]string{}}
	var cands []retention.Candidate
	listings := map[string]retention.Listing{}
	for _, repo := range c.Repos {
		l, err := c.list(ctx, repo)
		if err != nil {
			return nil, err
		}
		listings[repo] = l
		p.artifacts[repo] = l.Artifacts
		for _, d := range l.Candidates() {
			cand, err := c.candidate(ctx, repo, d, l.Images[d])
			if err != nil {
				return nil, err
			}
			cands = append(cands, cand)
			p.prov[d] = append(p.prov[d], cand.Inputs...)
		}
	}
	keep, err := c.keepSet(ctx, p.prov)
	if err != nil {
		return nil, err
	}
	p.Keep = keep
	p.Decisions = retention.Decide(keep, c.Repos, cands)
	for _, repo := range c.Repos {
		orphans, err := c.orphans(ctx, repo, listings[repo], keep)
		if err != nil {
			return nil, err
		}
		p.Orphans = append(p.Orphans, orphans...)
	}
	if p.FreedBytes, err = c.freed(ctx, p, listings); err != nil {
		return nil, err
	}
	return p, nil
}

// keepSet reads the cluster and computes the keep set, expanded through
// the attested inputs in prov.
func (c *Config) keepSet(ctx context.Context, prov map[string][]trust.Inputs) (retention.Set, error) {
	cl, err := c.Cluster(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster for the keep set: %w", err)
	}
	cl.Live = append(slices.Clone(cl.Live), c.Live...)
	keep, err := retention.Resolve(retention.NamedImages(cl, c.PerPool), func(ref string) (string, error) {
		return c.resolve(ctx, ref)
	})
	if err != nil {
		return nil, err
	}
	keep.Expand(prov)
	return keep, nil
}

// resolve reads the digest a tag names now, through the mirrors as a
// node pulls it; a tag that names nothing keeps nothing.
func (c *Config) resolve(ctx context.Context, s string) (string, error) {
	ref, err := c.Remote.ParseRef(s)
	if err != nil {
		return "", err
	}
	desc, err := c.Remote.Head(ctx, ref)
	if err = registry.Classify(err, "resolving", s); errors.Is(err, registry.ErrNotFound) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	return desc.Digest.String(), nil
}

// list reads repo's tags and the digest each ordinary tag names; the
// artifact tags are sorted by the subject their name carries.
func (c *Config) list(ctx context.Context, repo string) (retention.Listing, error) {
	r, err := c.Remote.ParseRepo(repo)
	if err != nil {
		return retention.Listing{}, err
	}
	tags, err := c.Remote.ListTags(ctx, r)
	if errors.Is(err, registry.ErrNotFound) {
		// A repository the registry does not know (NAME_UNKNOWN) holds
		// nothing, kiln's or anyone's: there is nothing to prune, as on a
		// new install before the first build.
		c.logf("repository %s: not known to the registry, nothing to prune there", repo)
		return retention.Classify(nil), nil
	}
	if err != nil {
		return retention.Listing{}, err
	}
	byTag := make(map[string]string, len(tags))
	probe := retention.Classify(namesOnly(tags))
	for _, ts := range probe.Images {
		for _, t := range ts {
			desc, err := c.Remote.HeadNamed(ctx, r.Tag(t))
			if err = registry.Classify(err, "reading", r.Tag(t).String()); errors.Is(err, registry.ErrNotFound) {
				continue // deleted since the listing
			} else if err != nil {
				return retention.Listing{}, err
			}
			byTag[t] = desc.Digest.String()
		}
	}
	for subject, ts := range probe.Artifacts {
		for _, t := range ts {
			byTag[t] = subject
		}
	}
	return retention.Classify(byTag), nil
}

// namesOnly maps each tag to "": enough for Classify to tell artifact
// tags from the rest before any tag is read.
func namesOnly(tags []string) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[t] = ""
	}
	return m
}

// candidate verifies one manifest with kiln's key. A verification that
// fails leaves it Unverified (it stays); a registry that cannot be read
// fails the plan, since the image's attested inputs may be what keeps a
// kmod image.
func (c *Config) candidate(ctx context.Context, repo, digest string, tags []string) (retention.Candidate, error) {
	cand := retention.Candidate{Repo: repo, Digest: digest, Tags: tags}
	ref := repo + "@" + digest
	sts, err := sign.VerifiedStatements(ctx, c.Remote, ref, c.Verifier)
	if err != nil {
		if exitcode.IsFault(err) {
			return cand, fmt.Errorf("verifying %s: %w", ref, err)
		}
		cand.Unverified = err.Error()
		return cand, nil
	}
	for _, st := range sts {
		if in, err := trust.InputsOf(st); err == nil && kilnBuild(in.BuildType) {
			cand.Inputs = append(cand.Inputs, in)
		}
	}
	return cand, nil
}

func kilnBuild(t string) bool {
	return t == trust.BuildTypeNodeImage || t == trust.BuildTypeKmodBuild || t == trust.BuildTypeKmodSign
}

// orphans are subjects of l's artifact tags that have no tag, are not
// kept, are gone from the registry, and whose .sig verifies with kiln's
// key. Anything else (an untagged image still there, another signer's
// artifact) stays.
func (c *Config) orphans(ctx context.Context, repo string, l retention.Listing, keep retention.Set) ([]Orphan, error) {
	var out []Orphan
	for _, subject := range l.Orphans() {
		if keep.Has(subject) {
			continue
		}
		d, err := c.digestRef(repo, subject)
		if err != nil {
			return nil, err
		}
		_, err = c.Remote.HeadNamed(ctx, d)
		switch err = registry.Classify(err, "reading", d.String()); {
		case err == nil:
			continue // the image is there, untagged: not an orphan
		case !errors.Is(err, registry.ErrNotFound):
			return nil, err
		}
		if err := sign.VerifySignatureArtifact(ctx, c.Remote, d, c.Verifier); err != nil {
			if exitcode.IsFault(err) {
				return nil, err
			}
			c.logf("%s: artifacts of a deleted image, not signed with kiln's key: kept (%v)", d, err)
			continue
		}
		out = append(out, Orphan{Repo: repo, Subject: subject, Tags: l.Artifacts[subject]})
	}
	return out, nil
}

// digestRef is repo@digest, reached over plain HTTP when repo's
// registry is insecure.
func (c *Config) digestRef(repo, digest string) (name.Digest, error) {
	ref, err := c.Remote.ParseRef(repo + "@" + digest)
	if err != nil {
		return name.Digest{}, err
	}
	d, ok := ref.(name.Digest)
	if !ok {
		return name.Digest{}, fmt.Errorf("%s@%s is not a reference by digest", repo, digest)
	}
	return d, nil
}
