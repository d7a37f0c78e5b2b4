package retention

import (
	"fmt"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// Kernel-module images are pushed at the ModuleDay0's containerImage tag
// (and an unsigned image's tag), not at a kiln-<fingerprint> tag, so a
// rebuild moves the tag and leaves the previous image untagged, known
// only by its cosign .sig/.att tags. Those are what a prune finds them by.

// moduleDay0Images names what each ModuleDay0 points at now: its
// containerImage and unsigned image (tags, resolved when the keep set is
// made, so a kmod image a tag names is never deleted) and the image its
// status says was last applied to the pool.
func moduleDay0Images(mds []kmmv1beta1.ModuleDay0) []Named {
	var out []Named
	for _, md := range sortedBy(mds, func(m kmmv1beta1.ModuleDay0) string { return m.Namespace + "/" + m.Name }) {
		who := fmt.Sprintf("ModuleDay0 %s/%s", md.Namespace, md.Name)
		om := md.Spec.OSMapping
		if om.ContainerImage == "" {
			continue
		}
		out = append(out, Named{Image: om.ContainerImage, Reason: who + ": " + kmmv1beta1.ContainerImageField})
		// A containerImage that does not parse fails the keep set on its
		// own entry above, so its unsigned image's error adds nothing.
		if u, err := om.UnsignedImage(); err == nil && u != "" {
			out = append(out, Named{Image: u, Reason: who + ": the unsigned image"})
		}
		if d := md.Status.ImageDigest; d != "" {
			if ref, err := name.ParseReference(om.ContainerImage); err == nil {
				out = append(out, Named{Image: ref.Context().Name() + "@" + d, Reason: who + ": status.imageDigest, the image last applied"})
			}
		}
	}
	return out
}

// KmodRepositories are the repositories kiln pushes the ModuleDay0s' kmod
// images to: each containerImage's and unsigned image's repository, in
// order, each once. A reference that does not parse is an error naming
// the ModuleDay0 and the field.
func KmodRepositories(mds []kmmv1beta1.ModuleDay0) ([]string, error) {
	var out []string
	for _, md := range mds {
		om := md.Spec.OSMapping
		u, err := om.UnsignedImage()
		if err != nil {
			return nil, fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
		}
		for _, f := range []struct{ field, ref string }{
			{kmmv1beta1.ContainerImageField, om.ContainerImage}, {kmmv1beta1.UnsignedImageField, u},
		} {
			if f.ref == "" {
				continue
			}
			r, err := RepositoryOf(f.ref)
			if err != nil {
				return nil, fmt.Errorf("ModuleDay0 %s/%s: %s %q: %w", md.Namespace, md.Name, f.field, f.ref, err)
			}
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// RepositoryOf is the repository (registry/path) an image reference
// names, spelled as go-containerregistry spells it.
func RepositoryOf(ref string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", err
	}
	return r.Context().Name(), nil
}

// isKmod reports whether every input is of a kmod build or signing: the
// candidate is a kernel-module image, not a node image.
func isKmod(ins []trust.Inputs) bool {
	return len(ins) > 0 && !slices.ContainsFunc(ins, func(in trust.Inputs) bool {
		return in.BuildType != trust.BuildTypeKmodBuild && in.BuildType != trust.BuildTypeKmodSign
	})
}

// decideKmod applies the kmod image rules once kiln's signature and kmod
// attestation verified: it goes only when no tag names it (the
// ModuleDay0's tag moved on), kiln's own fingerprint tags aside, and kiln
// attested it for this repository (the attested target's).
func decideKmod(c Candidate) (bool, string) {
	for _, t := range c.Tags {
		if !ownTag(t, c.Inputs) {
			return false, fmt.Sprintf("tag %s names it: a kmod image goes only once no tag but kiln's own names it", t)
		}
	}
	var targets []string
	for _, in := range c.Inputs {
		target := in.Parameters["target"]
		if r, err := RepositoryOf(target); err == nil && r == c.Repo {
			return true, "kiln's kmod image, no longer tagged, needed by nothing in the keep set"
		}
		targets = append(targets, target)
	}
	return false, fmt.Sprintf("kiln attested it for %v, not for repository %s", targets, c.Repo)
}

// ownTag reports whether t is a kiln-<fingerprint> tag naming the
// fingerprint of one of ins.
func ownTag(t string, ins []trust.Inputs) bool {
	m := fingerprintTag().FindStringSubmatch(t)
	return m != nil && slices.ContainsFunc(ins, func(in trust.Inputs) bool { return in.Fingerprint() == m[1] })
}
