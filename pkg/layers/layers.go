package layers

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

const (
	// WhiteoutPrefix marks a tar entry that deletes the entry it names
	// from the layers below.
	WhiteoutPrefix = ".wh."
	// OpaqueMarker, inside a folder, hides that folder's content in the
	// layers below.
	OpaqueMarker = WhiteoutPrefix + WhiteoutPrefix + ".opq"
)

// MaxEntries caps the entries Walk reads from one image: the paths it
// remembers grow with them. An RHCOS image has a few hundred thousand.
const MaxEntries = 4 << 20

// ErrStop, returned by a WalkFunc, ends Walk early without an error.
var ErrStop = errors.New("stop walking the layers")

// WalkFunc is called once for every entry of the flattened filesystem
// (twice if one layer holds the same path twice: the later one wins, as
// on extraction). name is the entry's path cleaned and without a leading
// slash ("usr/lib/x"); r reads a regular file's content.
type WalkFunc func(name string, h *tar.Header, r io.Reader) error

// Walk calls fn for the entries of img's flattened filesystem, top layer
// first, so a caller looking for one file can stop (ErrStop) at the layer
// that holds it without reading the layers below. Whiteout entries are
// applied and never passed to fn.
func Walk(img v1.Image, fn WalkFunc) error {
	ls, err := img.Layers()
	if err != nil {
		return fmt.Errorf("listing layers: %w", err)
	}
	var f flattener
	f.init()
	for i := len(ls) - 1; i >= 0; i-- {
		err := f.layer(ls[i], fn)
		if errors.Is(err, ErrStop) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading layer %d: %w", i, err)
		}
	}
	return nil
}

// flattener holds what the layers above the current one decided.
type flattener struct {
	entries int
	seen    map[string]bool // path → a folder (false: a file, link, ...)
	deleted map[string]bool // whited-out paths
	opaque  map[string]bool // opaque folders ("" is the root)
}

func (f *flattener) init() {
	f.seen, f.deleted, f.opaque = map[string]bool{}, map[string]bool{}, map[string]bool{}
}

// layer walks one layer. What it whites out, makes opaque or adds applies
// only to the layers below, whatever the order of its own tar entries.
func (f *flattener) layer(l v1.Layer, fn WalkFunc) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	var next flattener
	next.init()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if f.entries++; f.entries > MaxEntries {
			return fmt.Errorf("more than %d tar entries in the image, kiln's limit", MaxEntries)
		}
		name, err := Clean(h.Name)
		if err != nil {
			return err
		}
		if err := f.entry(&next, name, h, tr, fn); err != nil {
			return err
		}
	}
	f.merge(&next)
	return nil
}

func (f *flattener) entry(next *flattener, name string, h *tar.Header, tr io.Reader, fn WalkFunc) error {
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	if base == OpaqueMarker {
		next.opaque[dir] = true
		return nil
	}
	if gone, ok := strings.CutPrefix(base, WhiteoutPrefix); ok {
		next.deleted[path.Join(dir, gone)] = true
		return nil
	}
	if name == "" || f.hidden(name) {
		return nil
	}
	next.seen[name] = h.Typeflag == tar.TypeDir
	return fn(name, h, tr)
}

// hidden: a layer above has this path, deleted it or a parent, made a
// parent opaque, or put a non-folder where a parent would be.
func (f *flattener) hidden(name string) bool {
	if _, ok := f.seen[name]; ok || f.deleted[name] {
		return true
	}
	for p := name; p != ""; {
		p = parent(p)
		if f.opaque[p] || f.deleted[p] {
			return true
		}
		if isDir, ok := f.seen[p]; ok && !isDir {
			return true
		}
	}
	return false
}

func parent(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

func (f *flattener) merge(next *flattener) {
	for k, v := range next.seen {
		f.seen[k] = v
	}
	for k := range next.deleted {
		f.deleted[k] = true
	}
	for k := range next.opaque {
		f.opaque[k] = true
	}
}

// Clean turns a tar entry name into a path without a leading slash or
// "./" ("" is the root). A name that climbs out of the root (`..`) is an
// error: no layer kiln reads has one, and no stage should guess what it
// means.
func Clean(name string) (string, error) {
	p := strings.TrimPrefix(name, "/")
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "", fmt.Errorf("tar entry %q: a path with `..` is not allowed in a layer", name)
		}
	}
	p = path.Clean("/" + p)
	return strings.TrimPrefix(p, "/"), nil
}
