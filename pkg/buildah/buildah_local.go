package buildah

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// BudLocal builds b as BudAndPush does, up to the push: it writes the
// result to an OCI layout under work (a folder the caller removes after it
// is done with the image) and returns the image BudAndPush pushes, with
// its digest. BudAndPush and every rebuild go through here.
//
// Why not `buildah push docker://…`: that push (containers/image) uploads
// no layer the registry already has in some form. It looks every layer's
// uncompressed digest up in its blob-info cache (one per machine,
// /var/lib/containers/cache for root), and when the cache knows a gzip
// blob of the same content in the target registry, from any earlier pull
// or push, any repository, it mounts that blob and names it in the
// manifest. So the pushed digest depended on what that machine had done
// before (measured with buildah 1.28: an uncompressed base layer was
// gzipped by the push on one run and replaced by another image's blob of
// the same content on the next). Here no cache is asked: every layer is
// compressed by buildah (deterministic) except the layers taken from
// Bases, which keep the base manifest's descriptor, compressed or not: the
// push mounts them, and a custom base (kmod image) keeps the payload
// base's layer digests, as Preflight requires.
func (bb Buildah) BudLocal(ctx context.Context, r registry.Remote, b Bud, work string) (*Rebuilt, error) {
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
	dir, err := os.MkdirTemp(work, "oci-")
	if err != nil {
		return nil, err
	}
	if out, err := bb.run(ctx, "push", local, "oci:"+dir+":kiln"); err != nil {
		return nil, fmt.Errorf("writing %s to an OCI layout with buildah: %w\n%s", b.Target, err, tail(out, 15))
	}
	img, err := layoutImage(dir)
	if err != nil {
		return nil, fmt.Errorf("reading buildah's OCI layout: %w", err)
	}
	reuse := map[v1.Hash]baseLayer{}
	for _, ref := range b.Bases {
		if err := addBaseLayers(ctx, r, ref, reuse); err != nil {
			return nil, err
		}
	}
	out, err := substituteBaseLayers(img, reuse)
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", b.Target, err)
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
// checked by digest) to reuse, by diffID.
func addBaseLayers(ctx context.Context, r registry.Remote, ref string, reuse map[v1.Hash]baseLayer) error {
	if ref == "" {
		return nil
	}
	n, err := r.ParseRef(ref)
	if err != nil {
		return err
	}
	if _, ok := n.(name.Digest); !ok {
		return fmt.Errorf("base image %s: want repository@sha256:…", ref)
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
		if OCILayerType(d.MediaType) == "" {
			continue // containers/image would not reuse it as is
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

// OCILayerType is the media type buildah's OCI manifest gives a base
// layer of type mt kept as the base has it: the same compression, the OCI
// name of a Docker type. "" for a type kiln does not keep (foreign or
// non-distributable layers): buildah's compression is used for those.
func OCILayerType(mt types.MediaType) types.MediaType {
	switch mt {
	case types.OCILayer, types.DockerLayer:
		return types.OCILayer
	case types.OCIUncompressedLayer, types.DockerUncompressedLayer:
		return types.OCIUncompressedLayer
	case types.OCILayerZStd:
		return types.OCILayerZStd
	}
	return ""
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
		old := descriptorJSON(d.MediaType, d.Digest, d.Size)
		if n := bytes.Count(raw, old); n != 1 {
			return nil, fmt.Errorf("layer %s occurs %d times in buildah's manifest, want once", d.Digest, n)
		}
		raw = bytes.Replace(raw, old, descriptorJSON(OCILayerType(b.desc.MediaType), b.desc.Digest, b.desc.Size), 1)
		out.remote[b.desc.Digest] = b.layer
	}
	var check v1.Manifest
	if err := json.Unmarshal(raw, &check); err != nil {
		return nil, fmt.Errorf("rewriting buildah's manifest: %w", err)
	}
	out.manifest = raw
	img, err = partial.CompressedToImage(out)
	if err != nil {
		return nil, err
	}
	return &mountingImage{Image: img, remote: out.remote}, nil
}

// mountingImage hands out the bases' own layers, so that a push to their
// registry mounts them instead of downloading and uploading them.
type mountingImage struct {
	v1.Image
	remote map[v1.Hash]v1.Layer
}

func (i *mountingImage) Layers() ([]v1.Layer, error) {
	m, err := i.Manifest()
	if err != nil {
		return nil, err
	}
	ls := make([]v1.Layer, 0, len(m.Layers))
	for _, d := range m.Layers {
		l, err := i.LayerByDigest(d.Digest)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
	return ls, nil
}

func (i *mountingImage) LayerByDigest(h v1.Hash) (v1.Layer, error) {
	if l, ok := i.remote[h]; ok {
		return l, nil
	}
	return i.Image.LayerByDigest(h)
}

// descriptorJSON is how containers/image encodes a layer descriptor
// (image-spec's Descriptor field order, no annotations).
func descriptorJSON(mt types.MediaType, d v1.Hash, size int64) []byte {
	return []byte(`{"mediaType":"` + string(mt) + `","digest":"` + d.String() + `","size":` + strconv.FormatInt(size, 10) + `}`)
}

// rebuiltImage is buildah's image with some layers taken from the bases:
// those are read from their registry when asked, never copied to disk.
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
