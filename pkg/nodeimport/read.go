package nodeimport

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"sync/atomic"
)

// layerJobs is how many layers are read at once. Reading a layer (its
// download, the registry digest check, decompression, tar parsing,
// hashing) is independent of the other layers; only merging them is
// ordered, and merging is cheap. Four keeps a few connections busy, as
// go-containerregistry's own Write does.
const layerJobs = 4

// record is one tar entry as a reader saw it: the header and, for a
// regular file the import keeps, what reading its content gave.
type record struct {
	h      *tar.Header
	digest string // sha256 of the content, unless Options.NoDigests
	data   []byte // the content, for the files the lints read
}

// layerRead is one layer's records, in stream order. err, when set, comes
// after the records (the layer could not be read further); open says it
// came from opening the layer.
type layerRead struct {
	recs []record
	err  error
	open bool
}

// errBudget says a reader stopped because the layers read at once passed
// the read limits together: the merge decides, in layer order, which
// layer passes them (see ImportTars).
var errBudget = errors.New("read budget spent")

// errAbandoned says a reader stopped because a lower layer failed: the
// merge never gets past that layer, so this one is not needed.
var errAbandoned = errors.New("a lower layer failed")

// budget is what readers may still read, shared by the readers of one
// pass; it bounds the work of a pass by the limits whatever the number of
// layers.
type budget struct {
	entries, bytes atomic.Int64
}

func newBudget(entries, bytes int64) *budget {
	b := &budget{}
	b.entries.Store(entries)
	b.bytes.Store(bytes)
	return b
}

// readLayers reads every layer, layerJobs at a time, sharing one budget
// of opts' limits.
func readLayers(layers []func() (io.ReadCloser, error), opts Options) []*layerRead {
	out := make([]*layerRead, len(layers))
	b := newBudget(int64(opts.MaxEntries), opts.MaxBytes)
	var failed atomic.Int64 // lowest layer whose read failed
	failed.Store(int64(len(layers)))
	sem := make(chan struct{}, layerJobs)
	var wg sync.WaitGroup
	for i, open := range layers {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = readLayer(open, opts, b, func() bool { return failed.Load() < int64(i) })
			if err := out[i].err; err != nil && !errors.Is(err, errBudget) && !errors.Is(err, errAbandoned) {
				for cur := failed.Load(); int64(i) < cur && !failed.CompareAndSwap(cur, int64(i)); cur = failed.Load() {
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// readLayer reads one layer's records within b. It keeps the rules that
// decide how much the merge reads: the same entries are counted, a
// regular file's bytes are counted only when the merge would read them
// (an accepted name, owner and type), and the layer ends at a `..` name as
// ostree-ext's import does. The record that spends the budget is kept, so
// that a merge with the same budget fails on it exactly. abandon says a
// lower layer failed.
func readLayer(open func() (io.ReadCloser, error), opts Options, b *budget, abandon func() bool) *layerRead {
	lr := &layerRead{}
	if abandon() {
		lr.err = errAbandoned
		return lr
	}
	rc, err := open()
	if err != nil {
		lr.err, lr.open = err, true
		return lr
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		if abandon() {
			lr.err = errAbandoned
			return lr
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return lr
		}
		if err != nil {
			lr.err = err
			return lr
		}
		rec := record{h: h}
		if b.entries.Add(-1) < 0 {
			lr.recs, lr.err = append(lr.recs, rec), errBudget
			return lr
		}
		p, read := contentRead(h)
		if read {
			if b.bytes.Add(-h.Size) < 0 {
				lr.recs, lr.err = append(lr.recs, rec), errBudget
				return lr
			}
			if rec.digest, rec.data, err = readContent(p, h.Size, tr, opts.NoDigests); err != nil {
				lr.err = err
				return lr
			}
		}
		lr.recs = append(lr.recs, rec)
		if stopsLayer(h) {
			return lr
		}
	}
}

// contentRead says whether the merge reads h's content (entry reaches
// content for it) and the path it reads it as.
func contentRead(h *tar.Header) (string, bool) {
	if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeRegA {
		return "", false
	}
	p, f := checkName(h.Name)
	if f != nil || ownerProblem(h) != "" || strings.HasPrefix(path.Base(p), ".wh.") {
		return "", false
	}
	return p, true
}

// stopsLayer says the merge stops reading the layer after h: a name with a
// `..` component, on which ostree-ext refuses the whole layer.
func stopsLayer(h *tar.Header) bool {
	return h.Typeflag != tar.TypeXGlobalHeader && strings.Contains("/"+h.Name+"/", "/../")
}

// readContent reads a regular file's content: its sha256 unless noDigest,
// and the content itself for the few files the lints read.
func readContent(p string, size int64, r io.Reader, noDigest bool) (string, []byte, error) {
	var w io.Writer = io.Discard
	h := sha256.New()
	if !noDigest {
		w = h
	}
	var kept *strings.Builder
	if keptFile(p) && size <= maxKept {
		kept = &strings.Builder{}
		w = io.MultiWriter(w, kept)
	}
	if _, err := io.Copy(w, r); err != nil {
		return "", nil, fmt.Errorf("reading %s: %w", p, err)
	}
	digest := ""
	if !noDigest {
		digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	}
	if kept == nil {
		return digest, nil, nil
	}
	return digest, []byte(kept.String()), nil
}
