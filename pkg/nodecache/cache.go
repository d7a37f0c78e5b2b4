package nodecache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/nodeimport"
	"github.com/kiln-dev/kiln/pkg/safepath"
	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// Format names the layout of an entry; change it whenever the entry's
// header or the key's derivation changes.
const Format = "kiln-nodecache/1"

// folder is where entries live inside the cache folder, which other
// caches may share.
const folder = "nodeimport"

// maxEntry caps what an entry may hold when it is read or written: a
// base of a hundred thousand files encodes to about 20 MB.
const maxEntry = 256 << 20

// Cache is a folder of node import bases. The zero Cache (no Dir) caches
// nothing.
type Cache struct {
	// Dir is the cache folder; it is created when missing.
	Dir string
	// Warnings receives one line per cache failure (escaped); nil
	// discards them.
	Warnings io.Writer
}

// Import returns what nodeimport.Import returns for img. The bottom base
// layers of img are the base: when the cache holds an entry for them,
// only the layers above are read; else the base's layers are read with
// their content checked against their digests and stored for the next
// image on the same base.
func (c *Cache) Import(img v1.Image, base int, opts nodeimport.Options) (*nodeimport.Tree, []nodeimport.Finding, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the image's layers: %w", err)
	}
	if c == nil || c.Dir == "" || base <= 0 || base > len(layers) {
		return nodeimport.Import(img, opts)
	}
	key, err := Key(layers[:base], opts)
	if err != nil {
		c.warn("computing the key of the image's base: %v", err)
		return nodeimport.Import(img, opts)
	}
	b := c.load(key, base, opts)
	if b == nil {
		if b, err = c.fill(key, layers[:base], opts); err != nil {
			return nil, nil, err
		}
	}
	return b.Import(uncompressed(layers[base:]))
}

// Key is the sha256 of what a base's import state derives from: the rules
// and entry format, the options and each layer's digest and diffID, in
// order.
func Key(layers []v1.Layer, opts nodeimport.Options) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%t %d %d %d %t\n", Format, nodeimport.RulesVersion,
		opts.FactoryVar, opts.NonUsr, opts.MaxBytes, opts.MaxEntries, opts.NoDigests)
	for i, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return "", fmt.Errorf("layer %d's digest: %w", i, err)
		}
		diff, err := l.DiffID()
		if err != nil {
			return "", fmt.Errorf("layer %d's diffID: %w", i, err)
		}
		fmt.Fprintf(h, "%s %s\n", d, diff)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// load returns the base stored under key, or nil when there is none or
// it cannot be used (said on Warnings unless it is simply absent).
func (c *Cache) load(key string, layers int, opts nodeimport.Options) *nodeimport.Base {
	raw, truncated, err := safepath.ReadRegularIn(c.Dir, filepath.Join(folder, key), maxEntry)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		c.warn("reading entry %s: %v", key, err)
		return nil
	case truncated:
		c.warn("reading entry %s: over %d bytes", key, maxEntry)
		return nil
	}
	b, err := decodeEntry(raw, key)
	if err == nil && (b.Layers() != layers || b.Options() != withDefaults(opts)) {
		err = fmt.Errorf("it holds %d layers read with %+v, want %d with %+v", b.Layers(), b.Options(), layers, withDefaults(opts))
	}
	if err != nil {
		c.warn("ignoring entry %s, it will be rewritten: %v", key, err)
		return nil
	}
	return b
}

// fill reads the base's layers, each checked against its diffID, and
// stores the result under key. A read that fails the check still gives
// the import (as without a cache), but nothing is stored.
func (c *Cache) fill(key string, layers []v1.Layer, opts nodeimport.Options) (*nodeimport.Base, error) {
	v := &verified{}
	b, err := nodeimport.ReadBase(v.openers(layers), opts)
	if err != nil {
		return nil, err
	}
	if err := v.err(); err != nil {
		c.warn("not storing the image's base: %v", err)
		return b, nil
	}
	raw, err := encodeEntry(nodeimport.RulesVersion, key, b)
	if err == nil && len(raw) > maxEntry {
		err = fmt.Errorf("%d bytes, over %d", len(raw), maxEntry)
	}
	if err == nil {
		err = safepath.WriteFile(c.Dir, filepath.Join(folder, key), raw, 0o644)
	}
	if err != nil {
		c.warn("storing entry %s: %v", key, err)
	}
	return b, nil
}

func (c *Cache) warn(format string, args ...any) {
	if c.Warnings != nil {
		// The messages name the folder (in their paths) or the entry.
		fmt.Fprintf(c.Warnings, "warning: node import cache: %s\n", termsafe.Escape(fmt.Sprintf(format, args...)))
	}
}

// withDefaults is opts as the importer holds them.
func withDefaults(opts nodeimport.Options) nodeimport.Options {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = nodeimport.DefaultMaxBytes
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = nodeimport.DefaultMaxEntries
	}
	return opts
}

func uncompressed(layers []v1.Layer) []func() (io.ReadCloser, error) {
	out := make([]func() (io.ReadCloser, error), len(layers))
	for i, l := range layers {
		out[i] = l.Uncompressed
	}
	return out
}
