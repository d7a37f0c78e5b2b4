package nodeimport

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode/utf8"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Limits on what Import reads from an image, which is outside input.
const (
	// DefaultMaxBytes caps the uncompressed bytes of all layers together.
	DefaultMaxBytes int64 = 64 << 30
	// DefaultMaxEntries caps the tar entries of all layers together.
	DefaultMaxEntries = 4 << 20
	// maxKept caps each of the small files the lints read.
	maxKept = 1 << 20
	// Linux's NAME_MAX and PATH_MAX: a node cannot create longer names.
	nameMax = 255
	pathMax = 4096
	// maxID is the largest uid/gid a node can own a file by: 2^32-1 is
	// (uid_t)-1, "no owner", for chown(2).
	maxID = 1<<32 - 2
)

// NonUsr says what the import does with content outside usr, etc and var.
type NonUsr int

const (
	// NonUsrFromImage reads the image's prepare-root.conf: kept when it
	// enables a transient root or composefs, else dropped.
	NonUsrFromImage NonUsr = iota
	// NonUsrDrop drops it (ostree-ext's default).
	NonUsrDrop
	// NonUsrKeep keeps it (root.transient = true).
	NonUsrKeep
)

// Options are the node's import behaviour and the read limits.
type Options struct {
	// FactoryVar models a node whose ostree predates 2024.3: the image's
	// /var is committed under /usr/share/factory/var instead of /var.
	FactoryVar bool
	NonUsr     NonUsr
	// MaxBytes and MaxEntries bound the read; zero means the defaults.
	MaxBytes   int64
	MaxEntries int
	// NoDigests leaves Entry.Digest empty: regular files are read but not
	// hashed. No rule looks at content digests (only a node view compares
	// them), so a caller that wants the findings alone skips the hashing
	// of every file of the image.
	NoDigests bool
}

// ErrTooLarge says an image passed Import's read limits.
var ErrTooLarge = errors.New("image exceeds the import's read limit")

// Import reads every layer of img, bottom first, and returns the committed
// tree and the findings of every rule. The error is for what prevents the
// reading (registry, decompression, limits), not for rule violations.
func Import(img v1.Image, opts Options) (*Tree, []Finding, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the image's layers: %w", err)
	}
	readers := make([]func() (io.ReadCloser, error), len(layers))
	for i, l := range layers {
		readers[i] = l.Uncompressed
	}
	return ImportTars(readers, opts)
}

// ImportTars is Import over uncompressed tar streams, bottom layer first.
//
// The layers are read at once (see readLayers) and merged in order, so
// the result, findings and errors are those of reading them one after
// the other: the merge counts the limits in layer order, and a layer
// whose reader stopped because the layers read at once spent the limits
// together is read again, alone, with what the layers below it left.
func ImportTars(layers []func() (io.ReadCloser, error), opts Options) (*Tree, []Finding, error) {
	im := newImporter(opts)
	reads := readLayers(layers, im.opts)
	for i, lr := range reads {
		if errors.Is(lr.err, errBudget) {
			left := newBudget(int64(im.opts.MaxEntries-im.entries), im.opts.MaxBytes-im.bytes)
			lr = readLayer(layers[i], im.opts, left, func() bool { return false })
		}
		if err := im.layer(i, lr); err != nil {
			return nil, nil, err
		}
	}
	t := im.commit()
	return t, append(im.findings, lint(t)...), nil
}

type importer struct {
	opts     Options
	image    map[string]Entry // merged, by image path
	findings []Finding
	bytes    int64
	entries  int
	// ostreeLayers are the layers in ostree's own export format (they
	// carry sysroot/ostree/repo): ostree imports them whole, with no
	// filter, as the base commit.
	ostreeLayers map[int]bool
}

func newImporter(opts Options) *importer {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	return &importer{opts: opts, image: map[string]Entry{}, ostreeLayers: map[int]bool{}}
}

func (im *importer) find(rule string, sev Severity, p string, layer int, format string, args ...any) {
	im.findings = append(im.findings, Finding{Rule: rule, Severity: sev, Path: p, Layer: layer, Message: fmt.Sprintf(format, args...)})
}

// layerState is one layer being read: its own entries, for hard links,
// and the whiteouts it applies to the layers below.
type layerState struct {
	index int
	own   map[string]Entry
}

// layer merges one layer's records into the image, then reports the
// error that ended its reading, if any.
func (im *importer) layer(i int, lr *layerRead) error {
	if lr.open {
		return fmt.Errorf("opening layer %d: %w", i, lr.err)
	}
	ls := &layerState{index: i, own: map[string]Entry{}}
	for _, rec := range lr.recs {
		if im.entries++; im.entries > im.opts.MaxEntries {
			return fmt.Errorf("reading layer %d: %w: more than %d entries", i, ErrTooLarge, im.opts.MaxEntries)
		}
		stop, err := im.entry(ls, rec)
		if err != nil {
			return fmt.Errorf("reading layer %d: %w", i, err)
		}
		if stop {
			return nil
		}
	}
	if lr.err != nil {
		return fmt.Errorf("reading layer %d: %w", i, lr.err)
	}
	return nil
}

// entry applies one tar entry. stop says the layer failed as a whole
// (ostree-ext refuses the layer on a `..`): the rest is not read.
func (im *importer) entry(ls *layerState, rec record) (stop bool, err error) {
	h := rec.h
	if h.Typeflag == tar.TypeXGlobalHeader {
		// A PAX global header (git archive writes one) is no file: the
		// import's tar reader consumes it.
		return false, nil
	}
	raw := h.Name
	p, ok := im.checkName(ls.index, raw)
	if !ok {
		return strings.Contains("/"+raw+"/", "/../"), nil
	}
	if _, pax := h.PAXRecords["path"]; pax && under(p, "/etc") {
		im.find(RulePAXPathEtc, Error, p, ls.index, "the name is carried by a PAX path record; ostree-ext from late 2024 until its 2026 fix commits such an entry at /etc instead of /usr/etc, and the node's upgrade then fails with \"Tree contains both /etc and /usr/etc\" (write it as a GNU long name)")
	}
	if !im.checkOwner(ls.index, p, h) {
		return false, nil
	}
	if strings.HasPrefix(path.Base(p), ".wh.") {
		im.whiteout(ls, p)
		return false, nil
	}
	e := Entry{Mode: h.Mode & 0o7777, UID: h.Uid, GID: h.Gid, Source: p, Layer: ls.index}
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeRegA:
		if err := im.content(&e, h.Size, rec); err != nil {
			return false, err
		}
	case tar.TypeDir:
		e.Type = Dir
	case tar.TypeSymlink:
		if !utf8.ValidString(h.Linkname) {
			im.find(RuleUTF8, Error, p, ls.index, "the symlink target %q is not UTF-8; ostree-ext refuses the layer", h.Linkname)
			return false, nil
		}
		e.Type, e.Link = Symlink, h.Linkname
	case tar.TypeLink:
		t, ok := im.hardlink(ls, p, h.Linkname)
		if !ok {
			return false, nil
		}
		e.Type, e.Digest, e.Size, e.data = Regular, t.Digest, t.Size, t.data
	default:
		im.find(RuleFileType, Error, p, ls.index, "tar type %q (%s) is not a regular file, directory, symlink or hard link; ostree-ext refuses the layer", string(h.Typeflag), typeName(h.Typeflag))
		return false, nil
	}
	if p == "/" {
		return false, nil // the root folder itself
	}
	im.put(ls, p, e)
	return false, nil
}

// checkName validates a tar name for the layer being read; see
// checkName.
func (im *importer) checkName(layer int, raw string) (string, bool) {
	p, f := checkName(raw)
	if f != nil {
		f.Layer = layer
		im.findings = append(im.findings, *f)
		return "", false
	}
	return p, true
}

// checkName validates a tar name as ostree-ext does and returns the image
// path (absolute, cleaned), or the finding that refuses it.
func checkName(raw string) (string, *Finding) {
	shown := "/" + strings.TrimPrefix(raw, "/")
	refuse := func(rule, p, format string, args ...any) (string, *Finding) {
		return "", &Finding{Rule: rule, Severity: Error, Path: p, Message: fmt.Sprintf(format, args...)}
	}
	if !utf8.ValidString(raw) {
		return refuse(RuleUTF8, shown, "the path is not UTF-8; ostree-ext refuses the layer")
	}
	if strings.ContainsRune(raw, 0) {
		return refuse(RulePath, shown, "the path holds a NUL byte")
	}
	clean := strings.Trim(raw, "/")
	if clean == "" || clean == "." {
		if raw == "" {
			return refuse(RulePath, "/", "the tar entry has an empty name; ostree-ext refuses it")
		}
		return "/", nil
	}
	if len(raw) > pathMax {
		return refuse(RuleNameLength, shown, "the path is %d bytes, over Linux's PATH_MAX of %d", len(raw), pathMax)
	}
	for _, c := range strings.Split(clean, "/") {
		if c == ".." {
			return refuse(RulePath, shown, "a `..` component; ostree-ext refuses the whole layer")
		}
		if len(c) > nameMax {
			return refuse(RuleNameLength, shown, "a path component is %d bytes, over Linux's NAME_MAX of %d", len(c), nameMax)
		}
	}
	return path.Clean("/" + clean), nil
}

func (im *importer) checkOwner(layer int, p string, h *tar.Header) bool {
	ok := true
	for _, id := range owners(h) {
		if id.v < 0 || id.v > maxID {
			im.find(RuleOwner, Error, p, layer, "%s %d is outside 0..%d; no node can own a file by it", id.name, id.v, maxID)
			ok = false
		}
	}
	return ok
}

type owner struct {
	name string
	v    int
}

func owners(h *tar.Header) []owner { return []owner{{"uid", h.Uid}, {"gid", h.Gid}} }

// ownerProblem names the first id of h no node can own a file by, or "".
func ownerProblem(h *tar.Header) string {
	for _, id := range owners(h) {
		if id.v < 0 || id.v > maxID {
			return id.name
		}
	}
	return ""
}

// content counts a regular file's bytes against the limit and takes what
// its reader computed: the digest and the content the lints read.
func (im *importer) content(e *Entry, size int64, rec record) error {
	e.Type, e.Size = Regular, size
	if im.bytes += size; im.bytes > im.opts.MaxBytes {
		return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, im.opts.MaxBytes)
	}
	e.Digest, e.data = rec.digest, rec.data
	return nil
}

// keptFile names the files the lints read.
func keptFile(p string) bool {
	switch p {
	case "/etc/passwd", "/usr/etc/passwd", prepareRootConf, "/etc/ostree/prepare-root.conf":
		return true
	}
	d := path.Dir(p)
	return strings.HasSuffix(p, ".conf") && (d == "/usr/lib/tmpfiles.d" || d == "/etc/tmpfiles.d" ||
		d == "/usr/lib/sysusers.d" || d == "/etc/sysusers.d")
}

// hardlink resolves a hard link: its target must be an entry of the same
// layer, as libarchive's commit of the layer finds it nowhere else.
func (im *importer) hardlink(ls *layerState, p, target string) (Entry, bool) {
	if !utf8.ValidString(target) {
		im.find(RuleUTF8, Error, p, ls.index, "the hard link target %q is not UTF-8", target)
		return Entry{}, false
	}
	rel := strings.Trim(target, "/")
	for _, c := range strings.Split(rel, "/") {
		if c == ".." {
			im.find(RuleHardlink, Error, p, ls.index, "the hard link target %q leaves the image root (`..`)", target)
			return Entry{}, false
		}
	}
	t, ok := ls.own[path.Clean("/"+rel)]
	switch {
	case rel == "" || !ok:
		im.find(RuleHardlink, Error, p, ls.index, "the hard link target %q is not a file of the same layer; ostree-ext commits each layer on its own and fails on a link into a lower layer", target)
		return Entry{}, false
	case t.Type != Regular:
		im.find(RuleHardlink, Error, p, ls.index, "the hard link target %q is a %s, not a regular file", target, t.Type)
		return Entry{}, false
	}
	return t, true
}

// whiteout applies an overlay whiteout (.wh.<name>) or opaque marker
// (.wh..wh..opq) of layer ls to the layers below.
func (im *importer) whiteout(ls *layerState, p string) {
	dir, base := path.Dir(p), path.Base(p)
	if base == ".wh..wh..opq" {
		for k, e := range im.image {
			if k != dir && under(k, dir) && e.Layer < ls.index {
				delete(im.image, k)
			}
		}
		return
	}
	gone := path.Join(dir, strings.TrimPrefix(base, ".wh."))
	for k, e := range im.image {
		if under(k, gone) && e.Layer < ls.index {
			delete(im.image, k)
		}
	}
}

// put records an entry: a later one replaces an earlier one at the same
// path, and a non-folder replacing a folder removes its content.
func (im *importer) put(ls *layerState, p string, e Entry) {
	if old, ok := im.image[p]; ok && old.Type == Dir && e.Type != Dir {
		for k := range im.image {
			if under(k, p) {
				delete(im.image, k)
			}
		}
	}
	ls.own[p] = e
	if under(p, "/sysroot/ostree/repo") {
		im.ostreeLayers[ls.index] = true
	}
	if under(p, "/sysroot") {
		// An ostree-format base layer's object store: ostree imports it
		// itself and it is never part of the deployed tree; its objects
		// stay resolvable for the layer's hard links.
		return
	}
	im.image[p] = e
}

func typeName(t byte) string {
	switch t {
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "fifo"
	default:
		return "unsupported"
	}
}
