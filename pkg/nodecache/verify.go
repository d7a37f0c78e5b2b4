package nodecache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// verified opens layers so that each read is checked against the layer's
// diffID: the import stops reading a layer at the tar stream's end (and
// go-containerregistry checks a blob's digest only at its end), so the
// check drains what is left when the import closes the layer. An entry is
// stored only when every layer passed.
type verified struct {
	mu   sync.Mutex
	n    int
	errs []error
	ok   map[int]bool
}

func (v *verified) openers(layers []v1.Layer) []func() (io.ReadCloser, error) {
	v.n, v.ok = len(layers), map[int]bool{}
	out := make([]func() (io.ReadCloser, error), len(layers))
	for i, l := range layers {
		out[i] = func() (io.ReadCloser, error) {
			want, err := l.DiffID()
			if err != nil {
				return nil, err
			}
			rc, err := l.Uncompressed()
			if err != nil {
				return nil, err
			}
			return &checked{rc: rc, h: sha256.New(), want: want, done: func(err error) { v.done(i, err) }}, nil
		}
	}
	return out
}

func (v *verified) done(i int, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		v.errs = append(v.errs, fmt.Errorf("layer %d: %w", i, err))
		return
	}
	v.ok[i] = true
}

// err says why the reads cannot be trusted: a layer failed its check or
// was never read to its end.
func (v *verified) err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	errs := v.errs
	for i := range v.n {
		if !v.ok[i] && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("layer %d was not read to its end", i))
		}
	}
	return errors.Join(errs...)
}

// checked hashes what is read through it; Close reads the rest and
// compares the whole content's sha256 with the diffID.
type checked struct {
	rc   io.ReadCloser
	h    hash.Hash
	want v1.Hash
	done func(error)
}

func (c *checked) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.h.Write(p[:n])
	return n, err
}

func (c *checked) Close() error {
	_, err := io.Copy(c.h, c.rc)
	if cerr := c.rc.Close(); err == nil {
		err = cerr
	}
	if got := "sha256:" + hex.EncodeToString(c.h.Sum(nil)); err == nil && got != c.want.String() {
		err = fmt.Errorf("content hashes to %s, its diffID is %s", got, c.want)
	}
	c.done(err)
	return err
}
