package prune

import (
	"bytes"
	"context"
	"errors"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/retention"
)

// freed is the bytes a garbage collection reclaims after p: the blobs of
// the deleted manifests and artifacts that no remaining manifest of
// kiln's repositories, and no base image a candidate was built from,
// references.
func (c *Config) freed(ctx context.Context, p *Plan, listings map[string]retention.Listing) (int64, error) {
	gone := map[string]bool{} // repo@digest
	var deleted, kept []retention.Manifest
	add := func(list *[]retention.Manifest, repo, digest string) error {
		m, err := c.manifest(ctx, repo, digest)
		if err != nil || m == nil {
			return err
		}
		*list = append(*list, *m)
		return nil
	}
	for _, d := range p.Deletes() {
		gone[d.Repo+"@"+d.Digest] = true
		if err := add(&deleted, d.Repo, d.Digest); err != nil {
			return 0, err
		}
		for _, t := range listings[d.Repo].Artifacts[d.Digest] {
			if err := c.addTag(ctx, &deleted, d.Repo, t); err != nil {
				return 0, err
			}
		}
	}
	for _, o := range p.Orphans {
		gone[o.Repo+"@"+o.Subject] = true
		for _, t := range o.Tags {
			if err := c.addTag(ctx, &deleted, o.Repo, t); err != nil {
				return 0, err
			}
		}
	}
	for repo, l := range listings {
		for digest := range l.Images {
			if !gone[repo+"@"+digest] {
				if err := add(&kept, repo, digest); err != nil {
					return 0, err
				}
			}
		}
		for subject, tags := range l.Artifacts {
			if gone[repo+"@"+subject] {
				continue
			}
			for _, t := range tags {
				if err := c.addTag(ctx, &kept, repo, t); err != nil {
					return 0, err
				}
			}
		}
	}
	// The base images the candidates were built from share their layers.
	for _, ins := range p.prov {
		for _, in := range ins {
			for _, dep := range in.Dependencies {
				if repo, ok := strings.CutPrefix(dep.URI, "oci://"); ok {
					if err := add(&kept, repo, dep.Digest); err != nil {
						return 0, err
					}
				}
			}
		}
	}
	return retention.Freed(deleted, kept), nil
}

// addTag adds the manifest repo:tag names now, if any.
func (c *Config) addTag(ctx context.Context, list *[]retention.Manifest, repo, tag string) error {
	r, err := c.Remote.ParseRepo(repo)
	if err != nil {
		return err
	}
	desc, err := c.Remote.GetNamed(ctx, r.Tag(tag))
	if err = registry.Classify(err, "reading", r.Tag(tag).String()); errors.Is(err, registry.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	m, err := blobsOf(desc.Digest.String(), desc.Size, desc.Manifest)
	if err != nil {
		return err
	}
	*list = append(*list, m)
	return nil
}

// manifest reads repo@digest's blobs; nil when it is gone or cannot be
// parsed as a manifest (it then counts for nothing).
func (c *Config) manifest(ctx context.Context, repo, digest string) (*retention.Manifest, error) {
	ref, err := c.digestRef(repo, digest)
	if err != nil {
		return nil, err
	}
	desc, err := c.Remote.GetNamed(ctx, ref)
	if err = registry.Classify(err, "reading", ref.String()); errors.Is(err, registry.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	m, err := blobsOf(digest, desc.Size, desc.Manifest)
	if err != nil {
		return nil, nil
	}
	return &m, nil
}

// blobsOf lists what a manifest keeps in the registry's storage: itself,
// its config and layers. An index's children are manifests of their own,
// which deleting the index leaves in place.
func blobsOf(digest string, size int64, raw []byte) (retention.Manifest, error) {
	m := retention.Manifest{Digest: digest, Blobs: map[string]int64{digest: size}}
	mf, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return m, err
	}
	if mf.Config.Digest.Hex != "" {
		m.Blobs[mf.Config.Digest.String()] = mf.Config.Size
	}
	for _, l := range mf.Layers {
		m.Blobs[l.Digest.String()] = l.Size
	}
	return m, nil
}
