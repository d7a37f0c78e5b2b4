package reproduce

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// reproducer is one run: the images it checked and their report.
type reproducer struct {
	o      *Options
	r      registry.Remote
	id     trust.Identity
	bb     buildah.Buildah
	work   string
	p      *step.Progress
	report Report
	// done holds the images already reproduced (a kmod image under two
	// references is rebuilt once).
	done map[string]bool
}

// subject is the image under check as the registry holds it.
type subject struct {
	ref   name.Digest
	image v1.Image      // the image, or the first of an index
	index v1.ImageIndex // nil for a single image
}

// reproduce verifies ref's attestation, reproduces what it was built
// from (with Deep), rebuilds it, and adds the comparison to the report.
func (rp *reproducer) reproduce(ctx context.Context, ref string) error {
	if rp.done[ref] {
		return nil
	}
	rp.done[ref] = true
	dig, err := name.NewDigest(ref)
	if err != nil {
		return exitcode.UsageErrorf("image %q: %v", ref, err)
	}
	rp.p.Printf("verifying kiln's attestation of %s with %s", ref, rp.id)
	at, err := attested(ctx, rp.r, dig, rp.id)
	if err != nil {
		return err
	}
	rp.p.Printf("%s is a %s build attested by kiln %s; rebuilding from its inputs", ref, at.Kind, orUnknown(at.BuilderVersion))
	sub, err := rp.fetch(ctx, dig)
	if err != nil {
		return err
	}
	var rebuilt *rebuiltImage
	switch at.Kind {
	case "node-image":
		rebuilt, err = rp.nodeImage(ctx, at, sub)
	case "kmod-build":
		rebuilt, err = rebuildKmodBuild(ctx, rp.r, rp.bb, at.Inputs, rp.o.SecretsDir, rp.work)
	case "kmod-sign":
		rebuilt, err = rp.kmodSign(ctx, at, sub)
	}
	if err != nil || rebuilt == nil {
		if err == nil {
			return nil // recorded in the report: nothing to compare
		}
		return fmt.Errorf("rebuilding %s (attested by kiln %s): %w", ref, orUnknown(at.BuilderVersion), err)
	}
	if d := at.Inputs.Diff(rebuilt.Inputs); d != "" {
		// The rebuild would not be the attested build: a format or
		// version difference, not a difference of the image.
		return fmt.Errorf("rebuilding %s: this kiln (%s) rebuilds from other inputs than kiln %s attested: %s; rebuild with the kiln that built it",
			ref, versionString(trust.BuilderVersion()), orUnknown(at.BuilderVersion), d)
	}
	return rp.compare(at, sub, rebuilt)
}

func orUnknown(v string) string {
	if v == "" {
		return "(version not attested)"
	}
	return v
}

// fetch reads the image under check by digest (through mirrors: the
// digest is checked, so a mirror cannot substitute content).
func (rp *reproducer) fetch(ctx context.Context, ref name.Digest) (*subject, error) {
	desc, err := rp.r.Get(ctx, ref)
	if err != nil {
		return nil, registry.Classify(err, "reading", ref.String())
	}
	s := &subject{ref: ref}
	if desc.MediaType.IsIndex() {
		if s.index, err = desc.ImageIndex(); err != nil {
			return nil, registry.Classify(err, "reading index", ref.String())
		}
		m, err := s.index.IndexManifest()
		if err != nil || len(m.Manifests) == 0 {
			return nil, fmt.Errorf("reading index %s: no images (%v)", ref, err)
		}
		if s.image, err = s.index.Image(m.Manifests[0].Digest); err != nil {
			return nil, registry.Classify(err, "reading", ref.String())
		}
		return s, nil
	}
	if s.image, err = desc.Image(); err != nil {
		return nil, registry.Classify(err, "reading", ref.String())
	}
	return s, nil
}

// nodeImage rebuilds a node image: its kmod base first (Deep), then the
// image itself from the rendered config whose hash kiln attested.
func (rp *reproducer) nodeImage(ctx context.Context, at *Attested, sub *subject) (*rebuiltImage, error) {
	if rp.o.Deep && at.Inputs.Parameters["kmodDigests"] != "" {
		// The base is this run's kmod image: reproduce it too.
		if err := rp.reproduce(ctx, at.Inputs.Parameters["baseImage"]); err != nil {
			return nil, fmt.Errorf("reproducing the kmod base: %w", err)
		}
	}
	want := at.Inputs.Parameters["renderedConfigHash"]
	mc, got, err := renderedConfig(sub.image, rp.o.RenderedConfig)
	if err != nil {
		return nil, err
	}
	if got != want {
		if rp.o.RenderedConfig != "" {
			return nil, exitcode.InputRejected(fmt.Errorf("--rendered-config %s (%s) hashes to %s, but kiln attested %s: not the config %s was built from",
				rp.o.RenderedConfig, mc.Name, got, want, at.Ref))
		}
		// The image does not hold the config it claims to be built from:
		// that alone makes it not reproducible.
		rp.report.add(Result{Image: at.Ref.String(), Kind: at.Kind, Reason: fmt.Sprintf(
			"%s in the image hashes (normalised) to %s, but kiln attested %s; pass the pool's rendered config with --rendered-config to rebuild and compare",
			imagebuild.CurrentConfigPath, got, want)})
		return nil, nil
	}
	rp.p.Printf("rendered config %s matches the attested hash %s", mc.Name, want)
	return rebuildNodeImage(ctx, rp.r, rp.bb, at.Inputs, mc, at.Ref.Context().String(), rp.work)
}

// kmodSign re-applies the signed image's module signatures to the
// attested unsigned image (reproduced first with Deep): the signatures
// are checked and transplanted, so no private key is needed.
func (rp *reproducer) kmodSign(ctx context.Context, at *Attested, sub *subject) (*rebuiltImage, error) {
	unsignedRef := at.Inputs.Parameters["unsignedImage"]
	if rp.o.Deep {
		if err := rp.reproduce(ctx, unsignedRef); err != nil {
			return nil, fmt.Errorf("reproducing the unsigned image: %w", err)
		}
	}
	dig, err := name.NewDigest(unsignedRef)
	if err != nil {
		return nil, fmt.Errorf("attested unsigned image %q: %w", unsignedRef, err)
	}
	unsigned, err := rp.fetch(ctx, dig)
	if err != nil {
		return nil, err
	}
	if sub.index != nil || unsigned.index != nil {
		return nil, fmt.Errorf("%s: kmod images are single-platform images, not indexes", at.Ref)
	}
	return resignKmod(unsigned.image, sub.image, at.Inputs)
}

// compare adds ref against its rebuild to the report.
func (rp *reproducer) compare(at *Attested, sub *subject, rebuilt *rebuiltImage) error {
	res := Result{Image: at.Ref.String(), Kind: at.Kind, Rebuilt: rebuilt.Digest.String()}
	if rebuilt.Digest.String() == at.Ref.DigestStr() {
		res.Identical = true
		rp.report.add(res)
		return nil
	}
	rp.p.Printf("%s rebuilt as %s: comparing", at.Ref, rebuilt.Digest)
	var d Diff
	var err error
	switch {
	case sub.index != nil && rebuilt.Index != nil:
		d, err = CompareIndex(sub.index, rebuilt.Index)
	case sub.index == nil && rebuilt.Image != nil:
		d, err = Compare(sub.image, rebuilt.Image)
	default:
		d.Manifest = []FieldDiff{{Field: "kind", Image: kindOf(sub.index != nil), Rebuilt: kindOf(rebuilt.Index != nil)}}
	}
	if err != nil {
		return fmt.Errorf("comparing %s with its rebuild: %w", at.Ref, err)
	}
	res.Diff = &d
	rp.report.add(res)
	return nil
}

func kindOf(index bool) string {
	if index {
		return "image index"
	}
	return "image"
}
