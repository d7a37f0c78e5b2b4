package osimage

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// VersionLabel carries the OS version of a CoreOS image (RHCOS and FCOS set
// it); a custom base must carry the payload base's value.
const VersionLabel = "org.opencontainers.image.version"

// Preflight checks a custom base (an osImageURL override or a ModuleDay0
// image) against the payload's base, as the CoreOS layering enhancement asks: every layer of the
// payload base is present in the custom base, in order, as its first
// layers; and the OS version labels agree. Only manifests and configs are
// read. A failure is an error, never a warning: MCO's phase-1 check only
// warned, the enhancement makes it blocking.
func Preflight(ctx context.Context, r registry.Remote, payloadBase, customBase string) error {
	want, err := platformImage(ctx, r, payloadBase)
	if err != nil {
		return err
	}
	got, err := platformImage(ctx, r, customBase)
	if err != nil {
		return err
	}
	wm, err := want.Manifest()
	if err != nil {
		return registry.Classify(err, "reading payload base", payloadBase)
	}
	gm, err := got.Manifest()
	if err != nil {
		return registry.Classify(err, "reading custom base", customBase)
	}
	for i, l := range wm.Layers {
		if i >= len(gm.Layers) {
			return fmt.Errorf("preflight of custom base %s: it has %d layers, the payload base %s has %d; layer %d (%s) is missing",
				customBase, len(gm.Layers), payloadBase, len(wm.Layers), i, l.Digest)
		}
		if gm.Layers[i].Digest != l.Digest {
			return fmt.Errorf("preflight of custom base %s: layer %d is %s, the payload base %s has %s there; the custom base must be built FROM the payload base",
				customBase, i, gm.Layers[i].Digest, payloadBase, l.Digest)
		}
	}
	wc, err := want.ConfigFile()
	if err != nil {
		return registry.Classify(err, "reading payload base config", payloadBase)
	}
	gc, err := got.ConfigFile()
	if err != nil {
		return registry.Classify(err, "reading custom base config", customBase)
	}
	wv, gv := wc.Config.Labels[VersionLabel], gc.Config.Labels[VersionLabel]
	if wv == "" {
		return fmt.Errorf("preflight: payload base %s has no %s label; cannot check the OS version", payloadBase, VersionLabel)
	}
	if gv != wv {
		return fmt.Errorf("preflight of custom base %s: OS version %q (label %s) does not match the release's %q", customBase, gv, VersionLabel, wv)
	}
	return nil
}

// platformImage resolves ref to an image; for an index, the linux/amd64
// image or else the first one (the layers check is per platform, and every
// platform of a CoreOS index is built the same way). Both bases are
// inputs, read through the mirrors.
func platformImage(ctx context.Context, r registry.Remote, ref string) (v1.Image, error) {
	pr, err := r.ParseRef(ref)
	if err != nil {
		return nil, err
	}
	desc, err := r.Get(ctx, pr)
	if err != nil {
		return nil, registry.Classify(err, "reading image", ref)
	}
	if !desc.MediaType.IsIndex() {
		img, err := desc.Image()
		return img, registry.Classify(err, "reading image", ref)
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, registry.Classify(err, "reading image index", ref)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, registry.Classify(err, "reading image index", ref)
	}
	pick := -1
	for i, m := range im.Manifests {
		if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == "amd64" {
			pick = i
			break
		}
		if pick < 0 && m.MediaType.IsImage() {
			pick = i
		}
	}
	if pick < 0 {
		return nil, fmt.Errorf("reading image index %s: no image in it", ref)
	}
	img, err := idx.Image(im.Manifests[pick].Digest)
	return img, registry.Classify(err, "reading image", ref)
}
