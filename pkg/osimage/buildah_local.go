package osimage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// BudLocal builds b as BudAndPush does but pushes nothing: it writes the
// result to an OCI layout under work and returns the image the registry
// push to b.Target would have made, with that push's digest.
//
// Why not simply the layout's manifest: `buildah push` to the registry
// (containers/image) does not upload the layers the build took from its
// base; it finds them already in that registry (its blob-info cache
// remembers where it pulled them) and puts the base manifest's compressed
// descriptors into the new manifest. A push to a fresh OCI layout has
// nothing to reuse and compresses those layers again, giving other layer
// digests. So every layout layer whose uncompressed digest (diffID) is a
// layer of one of bases (images by digest, in b.Target's registry) gets
// that base's compressed descriptor back, byte-for-byte in buildah's own
// manifest JSON; the new layers keep buildah's compression, which is
// deterministic. A base in another registry than b.Target is not reused by
// the push either (containers/image only mounts within one registry), so
// its layers keep buildah's compression here too. Not covered: a base
// that buildah pulled through a mirror on b.Target's host under another
// name.
func (bb Buildah) BudLocal(ctx context.Context, r registry.Remote, b Bud, bases []string, work string) (*Rebuilt, error) {
	target, err := r.ParseRef(b.Target)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(work, "bud-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	local, err := bb.bud(ctx, r, b, tmp)
	if err != nil {
		return nil, err
	}
	defer func() { _, _ = bb.run(context.WithoutCancel(ctx), "rmi", local) }()
	dir := filepath.Join(work, "oci")
	if out, err := bb.run(ctx, "push", local, "oci:"+dir+":kiln"); err != nil {
		return nil, fmt.Errorf("writing %s to an OCI layout with buildah: %w\n%s", b.Target, err, tail(out, 15))
	}
	img, err := layoutImage(dir)
	if err != nil {
		return nil, fmt.Errorf("reading buildah's OCI layout: %w", err)
	}
	reuse := map[v1.Hash]baseLayer{}
	for _, ref := range bases {
		if err := addBaseLayers(ctx, r, ref, target.Context().RegistryStr(), reuse); err != nil {
			return nil, err
		}
	}
	out, err := substituteBaseLayers(img, reuse)
	if err != nil {
		return nil, fmt.Errorf("rebuilding %s: %w", b.Target, err)
	}
	d, err := out.Digest()
	if err != nil {
		return nil, err
	}
	return &Rebuilt{Digest: d, Image: out}, nil
}

// layoutImage reads the one image of an OCI layout.
func layoutImage(dir string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) != 1 {
		return nil, fmt.Errorf("%s holds %d manifests, want 1", dir, len(im.Manifests))
	}
	return idx.Image(im.Manifests[0].Digest)
}

// baseLayer is a base's layer as its registry holds it.
type baseLayer struct {
	desc  v1.Descriptor
	layer v1.Layer
}

// addBaseLayers adds the layers of ref (repository@digest, read and
// checked by digest) to reuse, by diffID, when ref is in host.
func addBaseLayers(ctx context.Context, r registry.Remote, ref, host string, reuse map[v1.Hash]baseLayer) error {
	if ref == "" {
		return nil
	}
	n, err := r.ParseRef(ref)
	if err != nil {
		return err
	}
	if n.Context().RegistryStr() != host {
		return nil
	}
	img, err := r.Image(ctx, n)
	if err != nil {
		return registry.Classify(err, "reading base image", ref)
	}
	m, err := img.Manifest()
	if err != nil {
		return fmt.Errorf("reading base image %s: %w", ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("reading base image %s: %w", ref, err)
	}
	if len(cf.RootFS.DiffIDs) != len(m.Layers) {
		return fmt.Errorf("base image %s: %d layers but %d diffIDs", ref, len(m.Layers), len(cf.RootFS.DiffIDs))
	}
	for i, d := range m.Layers {
		if !gzipLayer(d.MediaType) {
			continue // containers/image would not reuse it as a gzip layer
		}
		l, err := img.LayerByDigest(d.Digest)
		if err != nil {
			return fmt.Errorf("base image %s layer %s: %w", ref, d.Digest, err)
		}
		if _, ok := reuse[cf.RootFS.DiffIDs[i]]; !ok {
			reuse[cf.RootFS.DiffIDs[i]] = baseLayer{desc: d, layer: l}
		}
	}
	return nil
}

func gzipLayer(mt types.MediaType) bool {
	return mt == types.OCILayer || mt == types.DockerLayer
}

// substituteBaseLayers returns img with the base's compressed descriptor
// in place of every layer reuse knows by diffID. The manifest's bytes stay
// buildah's except for those digests and sizes.
func substituteBaseLayers(img v1.Image, reuse map[v1.Hash]baseLayer) (v1.Image, error) {
	raw, err := img.RawManifest()
	if err != nil {
		return nil, err
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	if len(cf.RootFS.DiffIDs) != len(m.Layers) {
		return nil, fmt.Errorf("built image has %d layers but %d diffIDs", len(m.Layers), len(cf.RootFS.DiffIDs))
	}
	out := &rebuiltImage{local: img, remote: map[v1.Hash]v1.Layer{}}
	for i, d := range m.Layers {
		b, ok := reuse[cf.RootFS.DiffIDs[i]]
		if !ok || b.desc.Digest == d.Digest {
			continue
		}
		if d.MediaType != types.OCILayer {
			return nil, fmt.Errorf("layer %d of buildah's image is %s, want %s", i, d.MediaType, types.OCILayer)
		}
		old := descriptorJSON(d.Digest, d.Size)
		if n := bytes.Count(raw, old); n != 1 {
			return nil, fmt.Errorf("layer %s occurs %d times in buildah's manifest, want once", d.Digest, n)
		}
		raw = bytes.Replace(raw, old, descriptorJSON(b.desc.Digest, b.desc.Size), 1)
		out.remote[b.desc.Digest] = b.layer
	}
	var check v1.Manifest
	if err := json.Unmarshal(raw, &check); err != nil {
		return nil, fmt.Errorf("rewriting buildah's manifest: %w", err)
	}
	out.manifest = raw
	return partial.CompressedToImage(out)
}

// descriptorJSON is how containers/image encodes a descriptor's digest
// and size (image-spec's Descriptor field order).
func descriptorJSON(d v1.Hash, size int64) []byte {
	return []byte(`"digest":"` + d.String() + `","size":` + strconv.FormatInt(size, 10))
}

// rebuiltImage is buildah's image with some layers taken from the bases:
// those are read from their registry when asked, never copied.
type rebuiltImage struct {
	manifest []byte
	local    v1.Image
	remote   map[v1.Hash]v1.Layer
}

func (i *rebuiltImage) RawManifest() ([]byte, error)   { return i.manifest, nil }
func (i *rebuiltImage) RawConfigFile() ([]byte, error) { return i.local.RawConfigFile() }

func (i *rebuiltImage) MediaType() (types.MediaType, error) {
	var m struct {
		MediaType types.MediaType `json:"mediaType"`
	}
	if err := json.Unmarshal(i.manifest, &m); err != nil {
		return "", err
	}
	return m.MediaType, nil
}

func (i *rebuiltImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if l, ok := i.remote[h]; ok {
		return l, nil
	}
	return i.local.LayerByDigest(h)
}
