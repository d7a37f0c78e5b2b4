package nodeimport

import (
	"io"
	"maps"
	"slices"
)

// Base is the import's state after an image's bottom layers, before the
// layers above them and before the commit: the merged image so far (with
// the small files the lints read), the findings of those layers, what
// they spent of the read limits and which of them are in ostree's own
// format. An image built on the same base resumes from it and reads only
// its own layers, with the findings, paths, layer numbers and order a
// full read gives (the merge is in layer order, so the state after the
// base's layers does not depend on what lies above them).
type Base struct {
	layers int
	im     *importer
}

// ReadBase reads the bottom layers of an image, as ImportTars would, and
// returns the state an import of any image on them resumes from. The
// error is ImportTars' for the same layers.
func ReadBase(layers []func() (io.ReadCloser, error), opts Options) (*Base, error) {
	im := newImporter(opts)
	if err := im.merge(0, layers); err != nil {
		return nil, err
	}
	return &Base{layers: len(layers), im: im}, nil
}

// Layers is the number of base layers read.
func (b *Base) Layers() int { return b.layers }

// Options are the options the base was read with; Import uses them.
func (b *Base) Options() Options { return b.im.opts }

// Import reads the layers above the base (bottom first; their indices
// follow the base's) and returns what ImportTars returns for the whole
// image. b is left as it was, so one base serves any number of imports.
func (b *Base) Import(upper []func() (io.ReadCloser, error)) (*Tree, []Finding, error) {
	im := b.im.clone()
	if err := im.merge(b.layers, upper); err != nil {
		return nil, nil, err
	}
	return im.finish()
}

// clone copies the importer's state; entries are values and their kept
// content is never written after the read, so it is shared.
func (im *importer) clone() *importer {
	return &importer{
		opts: im.opts, image: maps.Clone(im.image), findings: slices.Clone(im.findings),
		bytes: im.bytes, entries: im.entries, ostreeLayers: maps.Clone(im.ostreeLayers),
	}
}
