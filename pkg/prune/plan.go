package prune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

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
	// Repositories are the repositories scanned: the node image ones,
	// then the ModuleDay0s' kmod image ones.
	Repositories []string `json:"repositories"`
	// Keep is the keep set: digest to why it stays.
	Keep retention.Set `json:"keep"`
	// Decisions are the candidates (manifests kiln- tags name in kiln's
	// repositories, and every signed manifest there, tagged or not) with
	// what is done to each and why.
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

// MakePlan reads the cluster and kiln's repositories, the node image
// ones (Repos) and the kmod image ones the ModuleDay0s name, and decides.
// Nothing is deleted. A registry or cluster that cannot be read fails
// the plan: a keep set with a hole in it could delete what is needed.
func MakePlan(ctx context.Context, c Config) (*Plan, error) {
	cl, err := c.readCluster(ctx)
	if err != nil {
		return nil, err
	}
	repos, err := c.repositories(cl)
	if err != nil {
		return nil, err
	}
	p := &Plan{Repositories: repos, prov: map[string][]trust.Inputs{}, artifacts: map[string]map[string][]string{}}
	var cands []retention.Candidate
	listings := map[string]retention.Listing{}
	gone := map[string][]string{}
	for _, repo := range repos {
		l, err := c.list(ctx, repo)
		if err != nil {
			return nil, err
		}
		listings[repo] = l
		p.artifacts[repo] = l.Artifacts
		var judge []string
		if judge, gone[repo], err = c.scan(ctx, repo, l); err != nil {
			return nil, err
		}
		for _, d := range judge {
			cand, err := c.candidate(ctx, repo, d, l.Images[d])
			if err != nil {
				return nil, err
			}
			cands = append(cands, cand)
			p.prov[d] = append(p.prov[d], cand.Inputs...)
		}
	}
	keep, err := c.keepSetOf(ctx, cl, p.prov)
	if err != nil {
		return nil, err
	}
	p.Keep = keep
	p.Decisions = retention.Decide(keep, repos, cands)
	for _, repo := range repos {
		orphans, err := c.orphans(ctx, repo, listings[repo], gone[repo], keep)
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

// PoolPlaceholder in a repository stands for each pool's name, as in
// kiln-config's repository.
const PoolPlaceholder = "{pool}"

// repositories are Repos, one per pool of cl for each that names
// PoolPlaceholder, and after them the repositories of the ModuleDay0s'
// kmod images that Repos does not already name.
func (c *Config) repositories(cl retention.Cluster) ([]string, error) {
	kmods, err := retention.KmodRepositories(cl.ModuleDay0s)
	if err != nil {
		return nil, fmt.Errorf("reading the kmod image repositories: %w", err)
	}
	var out []string
	for _, r := range c.Repos {
		if !strings.Contains(r, PoolPlaceholder) {
			out = appendNew(out, r)
			continue
		}
		pools := make([]string, 0, len(cl.Pools))
		for _, p := range cl.Pools {
			pools = append(pools, p.Name)
		}
		slices.Sort(pools)
		for _, p := range pools {
			out = appendNew(out, strings.ReplaceAll(r, PoolPlaceholder, p))
		}
	}
	for _, r := range kmods {
		if !slices.Contains(out, r) {
			out = append(out, r)
			c.logf("repository %s: a ModuleDay0's kmod images, scanned too", r)
		}
	}
	return out, nil
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func (c *Config) readCluster(ctx context.Context) (retention.Cluster, error) {
	cl, err := c.Cluster(ctx)
	if err != nil {
		return retention.Cluster{}, fmt.Errorf("reading the cluster for the keep set: %w", err)
	}
	return cl, nil
}

// keepSetOf is the keep set of what cl names, expanded through prov.
func (c *Config) keepSetOf(ctx context.Context, cl retention.Cluster, prov map[string][]trust.Inputs) (retention.Set, error) {
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

// scan lists the digests of repo to judge: those a kiln- tag names, and
// every subject of cosign artifacts that is still in the registry (a kmod
// image, tagged or not since its tag moved, or an image signed under
// another tag). Subjects whose manifest is gone are returned apart, as
// possible orphans.
func (c *Config) scan(ctx context.Context, repo string, l retention.Listing) (judge, gone []string, err error) {
	judge = l.Candidates()
	for _, subject := range l.Subjects() {
		if slices.Contains(judge, subject) {
			continue
		}
		if _, tagged := l.Images[subject]; !tagged {
			d, err := c.digestRef(repo, subject)
			if err != nil {
				return nil, nil, err
			}
			_, err = c.Remote.HeadNamed(ctx, d)
			switch err = registry.Classify(err, "reading", d.String()); {
			case errors.Is(err, registry.ErrNotFound):
				gone = append(gone, subject)
				continue
			case err != nil:
				return nil, nil, err
			}
		}
		judge = append(judge, subject)
	}
	slices.Sort(judge)
	return judge, gone, nil
}

// orphans are the subjects gone from repo whose artifact tags l lists,
// that are not kept, and whose .sig verifies with kiln's key: what an
// interrupted prune left. Another signer's artifacts stay.
func (c *Config) orphans(ctx context.Context, repo string, l retention.Listing, gone []string, keep retention.Set) ([]Orphan, error) {
	var out []Orphan
	for _, subject := range gone {
		if keep.Has(subject) {
			continue
		}
		d, err := c.digestRef(repo, subject)
		if err != nil {
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
