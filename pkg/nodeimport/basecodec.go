package nodeimport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
)

// baseMagic starts an encoded Base and names its format: change the
// version whenever the encoding or the importer's state changes.
const baseMagic = "kiln-nodeimport-base/1\n"

// MarshalBinary encodes the base in a compact binary form (varints and
// length-prefixed strings): a base image holds tens of thousands of
// entries, and decoding them must cost a small part of reading the
// layers again.
func (b *Base) MarshalBinary() ([]byte, error) {
	im := b.im
	e := encoder(baseMagic)
	e.uint(uint64(b.layers))
	e.bool(im.opts.FactoryVar)
	e.uint(uint64(im.opts.NonUsr))
	e.int(im.opts.MaxBytes)
	e.uint(uint64(im.opts.MaxEntries))
	e.bool(im.opts.NoDigests)
	e.int(im.bytes)
	e.uint(uint64(im.entries))
	ostree := slices.Sorted(maps.Keys(im.ostreeLayers))
	e.uint(uint64(len(ostree)))
	for _, l := range ostree {
		e.uint(uint64(l))
	}
	e.uint(uint64(len(im.findings)))
	for _, f := range im.findings {
		e.str(f.Rule)
		e.str(string(f.Severity))
		e.str(f.Path)
		e.int(int64(f.Layer))
		e.str(f.Message)
	}
	e.uint(uint64(len(im.image)))
	for _, p := range slices.Sorted(mapKeys(im.image)) {
		x := im.image[p]
		e.str(p)
		e.str(string(x.Type))
		e.int(x.Mode)
		e.int(int64(x.UID))
		e.int(int64(x.GID))
		e.str(x.Link)
		e.str(x.Digest)
		e.int(x.Size)
		e.uint(uint64(x.Layer))
		e.bool(x.data != nil)
		e.str(string(x.data))
	}
	return e, nil
}

// UnmarshalBase decodes what MarshalBinary wrote. It checks what the
// importer relies on (types, layer numbers, clean absolute paths, limits)
// and refuses trailing bytes, so a damaged encoding is an error, never a
// different import.
func UnmarshalBase(raw []byte) (*Base, error) {
	if len(raw) < len(baseMagic) || string(raw[:len(baseMagic)]) != baseMagic {
		return nil, errors.New("decoding a node import base: not in format " + baseMagic[:len(baseMagic)-1])
	}
	d := &decoder{buf: raw[len(baseMagic):]}
	b, err := d.base()
	if err == nil && d.err == nil && len(d.buf) > 0 {
		err = fmt.Errorf("%d trailing bytes", len(d.buf))
	}
	if err = errors.Join(d.err, err); err != nil {
		return nil, fmt.Errorf("decoding a node import base: %w", err)
	}
	return b, nil
}

// maxBaseLayers bounds the layer count: an OCI image has at most a few
// hundred (containers/storage's overlay driver stops at 500).
const maxBaseLayers = 1 << 12

func (d *decoder) base() (*Base, error) {
	layers := d.count(maxBaseLayers)
	opts := Options{FactoryVar: d.bool(), NonUsr: NonUsr(d.uint()), MaxBytes: d.int(), MaxEntries: int(d.count(DefaultMaxEntries << 4)), NoDigests: d.bool()}
	if d.err == nil && (opts.NonUsr > NonUsrKeep || opts.MaxBytes <= 0 || opts.MaxEntries <= 0) {
		return nil, fmt.Errorf("options %+v are not an importer's", opts)
	}
	im := newImporter(opts)
	im.bytes, im.entries = d.int(), int(d.uint())
	if d.err == nil && (im.bytes < 0 || im.bytes > opts.MaxBytes || im.entries > opts.MaxEntries) {
		return nil, fmt.Errorf("%d bytes and %d entries read, outside the limits %d and %d", im.bytes, im.entries, opts.MaxBytes, opts.MaxEntries)
	}
	for n := d.count(len(d.buf)); n > 0 && d.err == nil; n-- {
		l := d.layer(layers)
		im.ostreeLayers[l] = true
	}
	for n := d.count(len(d.buf)); n > 0 && d.err == nil; n-- {
		f := Finding{Rule: d.str(), Severity: Severity(d.str()), Path: d.str(), Layer: int(d.int()), Message: d.str()}
		if d.err == nil && (f.Layer < -1 || f.Layer >= layers || (f.Severity != Error && f.Severity != Warning)) {
			return nil, fmt.Errorf("finding %q of layer %d, severity %q, in a base of %d layers", f.Rule, f.Layer, f.Severity, layers)
		}
		im.findings = append(im.findings, f)
	}
	n := d.count(len(d.buf))
	im.image = make(map[string]Entry, n)
	for ; n > 0 && d.err == nil; n-- {
		if err := d.entry(im.image, layers); err != nil {
			return nil, err
		}
	}
	return &Base{layers: layers, im: im}, nil
}

// entry decodes one merged entry into image.
func (d *decoder) entry(image map[string]Entry, layers int) error {
	p := d.str()
	// An entry's Source is its image path, the key it is merged under.
	e := Entry{Type: Type(d.str()), Mode: d.int(), UID: int(d.int()), GID: int(d.int()), Link: d.str(), Digest: d.str(), Size: d.int(), Source: p}
	e.Layer = d.layer(layers)
	kept, data := d.bool(), d.str()
	if d.err != nil {
		return nil
	}
	if _, dup := image[p]; dup || p == "/" || path.Clean(p) != p || !path.IsAbs(p) {
		return fmt.Errorf("entry path %q is not a clean absolute path met once", p)
	}
	if e.Type != Regular && e.Type != Dir && e.Type != Symlink || e.Size < 0 || len(data) > maxKept || (kept || data != "") && e.Type != Regular || !kept && data != "" {
		return fmt.Errorf("entry %q: type %q, size %d, %d bytes kept", p, e.Type, e.Size, len(data))
	}
	if kept {
		e.data = []byte(data)
	}
	image[p] = e
	return nil
}

// encoder appends varints and length-prefixed strings.
type encoder []byte

func (e *encoder) uint(v uint64) { *e = binary.AppendUvarint(*e, v) }
func (e *encoder) int(v int64)   { *e = binary.AppendVarint(*e, v) }
func (e *encoder) str(s string)  { e.uint(uint64(len(s))); *e = append(*e, s...) }
func (e *encoder) bool(v bool) {
	if v {
		e.uint(1)
	} else {
		e.uint(0)
	}
}

// decoder reads what encoder wrote; the first error sticks and every
// later read returns zero values.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
		d.fail("a truncated, overlong or padded number")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.buf)
	if n <= 0 || n != len(binary.AppendVarint(nil, v)) {
		d.fail("a truncated, overlong or padded number")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) bool() bool {
	switch v := d.uint(); v {
	case 0, 1:
		return v == 1
	default:
		d.fail("%d is not a boolean", v)
		return false
	}
}

// count reads a count of at most max: every counted item takes at least
// one byte, so a count past the bytes left is refused before anything is
// allocated for it.
func (d *decoder) count(max int) int {
	v := d.uint()
	if v > uint64(max) {
		d.fail("a count of %d, over %d", v, max)
		return 0
	}
	return int(v)
}

// layer reads a layer index of a base of the given layer count.
func (d *decoder) layer(layers int) int {
	v := d.uint()
	if d.err == nil && v >= uint64(layers) {
		d.fail("layer %d of a base of %d layers", v, layers)
		return 0
	}
	return int(v)
}

func (d *decoder) str() string {
	v := d.uint()
	if d.err == nil && v > uint64(len(d.buf)) {
		d.fail("a string of %d bytes with %d left", v, len(d.buf))
	}
	if d.err != nil {
		return ""
	}
	n := int(v)
	s := string(d.buf[:n])
	d.buf = d.buf[n:]
	return s
}
