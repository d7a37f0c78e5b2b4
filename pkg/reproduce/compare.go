package reproduce

import (
	"fmt"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Diff is what differs between the image under check and its rebuild.
// "Image" is always the image under check, "Rebuilt" the local rebuild.
// The zero Diff (no field set) means the two are the same.
type Diff struct {
	// Platform names the platform of one image of an index ("" for a
	// single image).
	Platform string `json:"platform,omitempty"`
	// Manifest lists manifest-level differences: media types, the config
	// digest, annotations.
	Manifest []FieldDiff `json:"manifest,omitempty"`
	// Config lists config differences: labels, env, history and the rest.
	Config []FieldDiff `json:"config,omitempty"`
	// Layers are the layers that differ, by index.
	Layers []LayerDiff `json:"layers,omitempty"`
	// Platforms are the per-platform diffs of an index.
	Platforms []Diff `json:"platforms,omitempty"`
}

// Empty reports whether nothing differs.
func (d Diff) Empty() bool {
	return len(d.Manifest) == 0 && len(d.Config) == 0 && len(d.Layers) == 0 && len(d.Platforms) == 0
}

// FieldDiff is one named value on both sides; "" where a side lacks it.
type FieldDiff struct {
	Field   string `json:"field"`
	Image   string `json:"image"`
	Rebuilt string `json:"rebuilt"`
}

// LayerDiff is one layer position whose blobs differ.
type LayerDiff struct {
	// Index is the layer's position, 0 the bottom layer.
	Index int `json:"index"`
	// Image and Rebuilt describe the layer on each side; nil where that
	// side has no layer at this index.
	Image   *LayerInfo `json:"image,omitempty"`
	Rebuilt *LayerInfo `json:"rebuilt,omitempty"`
	// Note explains a difference that no file shows (compression, tar
	// headers, entry order).
	Note string `json:"note,omitempty"`
	// Files are the entries that differ, sorted by path.
	Files []FileDiff `json:"files,omitempty"`
}

// LayerInfo identifies one layer blob.
type LayerInfo struct {
	Digest    string `json:"digest"`
	DiffID    string `json:"diffID"`
	Size      int64  `json:"size"`
	MediaType string `json:"mediaType"`
}

// Compare reports what differs between img (the image under check) and
// rebuilt. It reads every layer whose digest differs; layers both sides
// share (the base) are never read.
func Compare(img, rebuilt v1.Image) (Diff, error) {
	var d Diff
	if err := compareManifests(&d, img, rebuilt); err != nil {
		return d, err
	}
	if err := compareConfigs(&d, img, rebuilt); err != nil {
		return d, err
	}
	a, err := img.Layers()
	if err != nil {
		return d, fmt.Errorf("reading the layers of the image: %w", err)
	}
	b, err := rebuilt.Layers()
	if err != nil {
		return d, fmt.Errorf("reading the layers of the rebuild: %w", err)
	}
	for i := range max(len(a), len(b)) {
		ld, err := compareLayer(i, at(a, i), at(b, i))
		if err != nil {
			return d, fmt.Errorf("comparing layer %d: %w", i, err)
		}
		if ld != nil {
			d.Layers = append(d.Layers, *ld)
		}
	}
	return d, nil
}

func at(ls []v1.Layer, i int) v1.Layer {
	if i < len(ls) {
		return ls[i]
	}
	return nil
}

func compareManifests(d *Diff, img, rebuilt v1.Image) error {
	a, err := img.Manifest()
	if err != nil {
		return fmt.Errorf("reading the manifest of the image: %w", err)
	}
	b, err := rebuilt.Manifest()
	if err != nil {
		return fmt.Errorf("reading the manifest of the rebuild: %w", err)
	}
	d.Manifest = appendField(d.Manifest, "mediaType", string(a.MediaType), string(b.MediaType))
	d.Manifest = appendField(d.Manifest, "config.digest", a.Config.Digest.String(), b.Config.Digest.String())
	d.Manifest = appendMap(d.Manifest, "annotation ", a.Annotations, b.Annotations)
	return nil
}

// appendField adds name when its values differ.
func appendField(fs []FieldDiff, name, a, b string) []FieldDiff {
	if a == b {
		return fs
	}
	return append(fs, FieldDiff{Field: name, Image: a, Rebuilt: b})
}

// appendMap adds every key whose value differs, in key order; a missing
// key shows as "".
func appendMap(fs []FieldDiff, prefix string, a, b map[string]string) []FieldDiff {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for _, k := range sorted {
		av, aok := a[k]
		bv, bok := b[k]
		if av != bv || aok != bok {
			fs = append(fs, FieldDiff{Field: prefix + k, Image: quoteIf(av, aok), Rebuilt: quoteIf(bv, bok)})
		}
	}
	return fs
}

// quoteIf shows a present value quoted and a missing one as "(none)", so
// an empty value and a missing key read differently.
func quoteIf(v string, ok bool) string {
	if !ok {
		return "(none)"
	}
	return fmt.Sprintf("%q", v)
}

// compareLayer returns nil when the two layers are the same blob.
func compareLayer(i int, a, b v1.Layer) (*LayerDiff, error) {
	ai, err := layerInfo(a)
	if err != nil {
		return nil, err
	}
	bi, err := layerInfo(b)
	if err != nil {
		return nil, err
	}
	if ai != nil && bi != nil && *ai == *bi {
		return nil, nil
	}
	ld := &LayerDiff{Index: i, Image: ai, Rebuilt: bi}
	switch {
	case ai == nil:
		ld.Note = "only the rebuild has this layer"
	case bi == nil:
		ld.Note = "only the image has this layer"
	case ai.DiffID == bi.DiffID:
		// Same tar stream, compressed differently: no file can differ.
		ld.Note = "same uncompressed content (diffID); the compression or media type differs"
		return ld, nil
	}
	fa, oa, err := listLayer(a)
	if err != nil {
		return nil, fmt.Errorf("reading the image's layer: %w", err)
	}
	fb, ob, err := listLayer(b)
	if err != nil {
		return nil, fmt.Errorf("reading the rebuilt layer: %w", err)
	}
	ld.Files = diffFiles(fa, fb)
	if len(ld.Files) == 0 && ld.Note == "" {
		if slices.Equal(oa, ob) {
			ld.Note = "every file is equal; the tar streams differ in headers (format, names, padding)"
		} else {
			ld.Note = "every file is equal; the tar entries are in another order"
		}
	}
	return ld, nil
}

func layerInfo(l v1.Layer) (*LayerInfo, error) {
	if l == nil {
		return nil, nil
	}
	dig, err := l.Digest()
	if err != nil {
		return nil, fmt.Errorf("reading a layer digest: %w", err)
	}
	diffID, err := l.DiffID()
	if err != nil {
		return nil, fmt.Errorf("reading the diffID of %s: %w", dig, err)
	}
	size, err := l.Size()
	if err != nil {
		return nil, fmt.Errorf("reading the size of %s: %w", dig, err)
	}
	mt, err := l.MediaType()
	if err != nil {
		return nil, fmt.Errorf("reading the media type of %s: %w", dig, err)
	}
	return &LayerInfo{Digest: dig.String(), DiffID: diffID.String(), Size: size, MediaType: string(mt)}, nil
}

// CompareIndex pairs the images of two indexes by platform and compares
// each pair; an image only one side has is a manifest difference.
func CompareIndex(idx, rebuilt v1.ImageIndex) (Diff, error) {
	var d Diff
	a, err := platformImages(idx)
	if err != nil {
		return d, fmt.Errorf("reading the image's index: %w", err)
	}
	b, err := platformImages(rebuilt)
	if err != nil {
		return d, fmt.Errorf("reading the rebuilt index: %w", err)
	}
	am, _ := idx.IndexManifest()
	bm, _ := rebuilt.IndexManifest()
	if am != nil && bm != nil {
		d.Manifest = appendField(d.Manifest, "mediaType", string(am.MediaType), string(bm.MediaType))
		d.Manifest = appendMap(d.Manifest, "annotation ", am.Annotations, bm.Annotations)
	}
	for _, p := range sortedKeys(a, b) {
		ai, bi := a[p], b[p]
		if ai == nil || bi == nil {
			d.Manifest = append(d.Manifest, FieldDiff{Field: "platform " + p, Image: presence(ai != nil), Rebuilt: presence(bi != nil)})
			continue
		}
		ad, _ := ai.Digest()
		bd, _ := bi.Digest()
		if ad == bd {
			continue
		}
		pd, err := Compare(ai, bi)
		if err != nil {
			return d, fmt.Errorf("platform %s: %w", p, err)
		}
		pd.Platform = p
		d.Platforms = append(d.Platforms, pd)
	}
	return d, nil
}

func presence(ok bool) string {
	if ok {
		return "present"
	}
	return "(none)"
}

// platformImages maps "os/arch[/variant]" to each image of an index.
func platformImages(idx v1.ImageIndex) (map[string]v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	out := map[string]v1.Image{}
	for i, desc := range m.Manifests {
		if !desc.MediaType.IsImage() {
			continue
		}
		key := fmt.Sprintf("manifest %d", i)
		if desc.Platform != nil {
			key = desc.Platform.String()
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", desc.Digest, err)
		}
		out[key] = img
	}
	return out, nil
}

func sortedKeys(a, b map[string]v1.Image) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
