package prune

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/retention"
)

// Outcome is what Apply did.
type Outcome struct {
	// Deleted are the images (repo@digest) deleted with their artifacts,
	// and orphaned artifacts' subjects whose artifacts were deleted.
	Deleted []string `json:"deleted"`
	// Spared are planned deletes the cluster needed by the time of the
	// delete: repo@digest to why.
	Spared map[string]string `json:"spared,omitempty"`
}

// Apply deletes what p plans, each image only after reading the cluster
// again: one the keep set names by then stays. An image is deleted
// manifest first (which, on a registry that untags on delete, removes its
// fingerprint tag), then its fingerprint tag where the registry kept it,
// then its .att and its .sig. A prune stopped half-way leaves either the
// image with its proof, or artifacts whose .sig still proves them kiln's:
// the next prune finds them as Orphans and completes the job.
func Apply(ctx context.Context, c Config, p *Plan) (*Outcome, error) {
	out := &Outcome{Spared: map[string]string{}}
	for _, d := range p.Deletes() {
		ref := d.Repo + "@" + d.Digest
		if why, err := c.neededNow(ctx, p, d.Digest); err != nil {
			return out, err
		} else if why != "" {
			out.Spared[ref] = why
			c.logf("%s: needed since the plan (%s); kept", ref, why)
			continue
		}
		if err := c.deleteImage(ctx, d); err != nil {
			return out, c.refusal(err, p, out)
		}
		if err := c.deleteArtifacts(ctx, d.Repo, d.Digest, p.artifacts[d.Repo][d.Digest]); err != nil {
			return out, c.refusal(err, p, out)
		}
		out.Deleted = append(out.Deleted, ref)
		c.logf("deleted %s (%s) and its signature and attestation", ref, strings.Join(d.Tags, ", "))
	}
	for _, o := range p.Orphans {
		ref := o.Repo + "@" + o.Subject
		if why, err := c.neededNow(ctx, p, o.Subject); err != nil {
			return out, err
		} else if why != "" {
			out.Spared[ref] = why
			continue
		}
		if err := c.deleteArtifacts(ctx, o.Repo, o.Subject, o.Tags); err != nil {
			return out, c.refusal(err, p, out)
		}
		out.Deleted = append(out.Deleted, ref)
		c.logf("deleted the artifacts %s left by an earlier prune of %s", strings.Join(o.Tags, ", "), ref)
	}
	return out, nil
}

// neededNow reads the cluster again and says why digest is kept now, ""
// when it is not. While a run may still choose an image to reuse without
// having reported it (retention.ReusePending), every image is kept: the
// next prune deletes what is still unneeded then.
func (c *Config) neededNow(ctx context.Context, p *Plan, digest string) (string, error) {
	cl, err := c.readCluster(ctx)
	if err == nil {
		if pending := retention.ReusePending(cl.Runs, cl.TaskRuns); len(pending) > 0 {
			return strings.Join(pending, "; "), nil
		}
	}
	var keep retention.Set
	if err == nil {
		keep, err = c.keepSetOf(ctx, cl, p.prov)
	}
	if err != nil {
		return "", fmt.Errorf("re-reading the keep set before deleting %s: %w", digest, err)
	}
	return strings.Join(keep[digest], "; "), nil
}

// deleteImage deletes the manifest by digest, then each fingerprint tag
// that still names it.
func (c *Config) deleteImage(ctx context.Context, d retention.Decision) error {
	ref, err := c.digestRef(d.Repo, d.Digest)
	if err != nil {
		return err
	}
	if err := gone(c.Remote.Delete(ctx, ref)); err != nil {
		return err
	}
	for _, t := range d.Tags {
		if err := c.untag(ctx, ref.Context().Tag(t), d.Digest); err != nil {
			return err
		}
	}
	return nil
}

// untag deletes tag when it still names digest: a registry that keeps
// tags when their manifest is deleted by digest (docker-registry drops
// them; go-containerregistry's does not) would serve the tag on.
func (c *Config) untag(ctx context.Context, tag name.Tag, digest string) error {
	desc, err := c.Remote.HeadNamed(ctx, tag)
	if err = gone(registry.Classify(err, "reading", tag.String())); err != nil || desc == nil {
		return err
	}
	if desc.Digest.String() != digest {
		return nil // written again since: not what was deleted
	}
	return gone(c.Remote.Delete(ctx, tag))
}

// deleteArtifacts deletes the cosign artifacts tags name, .att before
// .sig: the .sig is what proves the rest kiln's, so it goes last.
func (c *Config) deleteArtifacts(ctx context.Context, repo, subject string, tags []string) error {
	order := slices.Clone(tags)
	slices.Sort(order) // sha256-<hex>.att sorts before sha256-<hex>.sig
	r, err := c.Remote.ParseRepo(repo)
	if err != nil {
		return err
	}
	for _, t := range order {
		desc, err := c.Remote.HeadNamed(ctx, r.Tag(t))
		if err = registry.Classify(err, "reading", r.Tag(t).String()); errors.Is(err, registry.ErrNotFound) {
			continue
		} else if err != nil {
			return err
		}
		if err := gone(c.Remote.Delete(ctx, r.Digest(desc.Digest.String()))); err != nil {
			return fmt.Errorf("deleting %s of %s@%s: %w", t, repo, subject, err)
		}
		if err := c.untag(ctx, r.Tag(t), desc.Digest.String()); err != nil {
			return fmt.Errorf("deleting %s of %s@%s: %w", t, repo, subject, err)
		}
	}
	return nil
}

// gone treats "not found" as done: a delete a previous prune (or another
// one) already made.
func gone(err error) error {
	if errors.Is(err, registry.ErrNotFound) {
		return nil
	}
	return err
}

// refusal adds to a registry's refusal to delete what the prune would
// have freed.
func (c *Config) refusal(err error, p *Plan, out *Outcome) error {
	if errors.Is(err, registry.ErrDeleteRefused) {
		return fmt.Errorf("%w; %d bytes would have been freed by deleting %d images (%d deleted before the refusal)",
			err, p.FreedBytes, len(p.Deletes()), len(out.Deleted))
	}
	return err
}
